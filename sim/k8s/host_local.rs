//! The `host-local` IPAM plugin on one node, as Calico's CNI calls it when its network config
//! says `"ipam": {"type": "host-local", "subnet": "usePodCidr"}`: the CNI swaps `usePodCidr`
//! for the Node's `spec.podCIDR` at every ADD (`cni-plugin/internal/pkg/utils/utils.go`
//! `ReplaceHostLocalIPAMPodCIDRs`; no podCIDR: "usePodCidr found but there is no IPv4 CIDR
//! configured") and host-local allocates from that one range
//! (`containernetworking/plugins` `plugins/ipam/host-local/backend/allocator`):
//!
//! - the range is `rangeStart` (default: the subnet's first address, `.1`) to `rangeEnd`
//!   (default: the address before the broadcast), and the gateway (default `.1`) is skipped, so
//!   a /24 holds 253 pods and a /22 1021;
//! - allocation is round-robin: it starts after `last_reserved_ip.0` when that address is in the
//!   range, else at `rangeStart`, and takes the first address with no reservation file;
//! - the state is a directory on the host, `/var/lib/cni/networks/k8s-pod-network/`: one file
//!   per reserved address (holding the container ID) and `last_reserved_ip.0`. It outlives the
//!   Node object: only `rm -rf` of the directory clears it.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

/// Where host-local keeps the node's reservations (its `dataDir` default plus the network name
/// of Calico's CNI config, `k8s-pod-network`).
pub const STATE_DIR: &str = "/var/lib/cni/networks/k8s-pod-network";

/// One node's host-local state directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostLocalStore {
    /// A reservation file per address, holding the container ID.
    reserved: BTreeMap<Ipv4Addr, String>,
    /// `last_reserved_ip.0`.
    last_reserved: Option<Ipv4Addr>,
}

/// The default range host-local derives from `subnet` (`Range.Canonicalize`): start, end,
/// gateway. `None` for a subnet too small to allocate from (/31, /32).
fn range(subnet: Ipv4Net) -> Option<(u32, u32, u32)> {
    if subnet.prefix_len() > 30 {
        return None;
    }
    let network = u32::from(subnet.network());
    let broadcast = u32::from(subnet.broadcast());
    Some((network + 1, broadcast - 1, network + 1))
}

impl HostLocalStore {
    /// CNI ADD for `container_id` with the Node's podCIDR: the next free address after the last
    /// one reserved, or host-local's error text.
    pub fn allocate(&mut self, subnet: Ipv4Net, container_id: &str) -> Result<Ipv4Addr, String> {
        let (start, end, gateway) =
            range(subnet).ok_or_else(|| format!("Network {subnet} too small to allocate from"))?;
        let last = self.last_reserved.map(u32::from).filter(|l| (start..=end).contains(l));
        // The first candidate is the address after the last reservation (wrapping to the start).
        let first = match last {
            Some(l) if l < end => l + 1,
            _ => start,
        };
        let size = end - start + 1;
        let free = (0..size)
            .map(|i| start + (first - start + i) % size)
            .filter(|a| *a != gateway)
            .map(Ipv4Addr::from)
            .find(|a| !self.reserved.contains_key(a))
            .ok_or_else(|| {
                format!(
                    "no IP addresses available in range set: {}-{}",
                    Ipv4Addr::from(start),
                    Ipv4Addr::from(end)
                )
            })?;
        self.reserved.insert(free, container_id.to_string());
        self.last_reserved = Some(free);
        Ok(free)
    }

    /// CNI DEL: the reservation file of `addr` goes.
    pub fn release(&mut self, addr: Ipv4Addr) {
        self.reserved.remove(&addr);
    }

    /// The reserved addresses, in order.
    pub fn reserved(&self) -> impl Iterator<Item = Ipv4Addr> + '_ {
        self.reserved.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    #[test]
    fn the_gateway_is_skipped_and_a_24_holds_253_pods() {
        let mut s = HostLocalStore::default();
        let subnet = net("10.112.0.0/24");
        let got: Vec<Ipv4Addr> = (0..253)
            .map(|i| s.allocate(subnet, &format!("c{i}")).unwrap())
            .collect();
        assert_eq!(got[0], Ipv4Addr::new(10, 112, 0, 2));
        assert_eq!(got[252], Ipv4Addr::new(10, 112, 0, 254));
        assert_eq!(
            s.allocate(subnet, "one-more").unwrap_err(),
            "no IP addresses available in range set: 10.112.0.1-10.112.0.254"
        );
    }

    #[test]
    fn allocation_goes_round_robin_from_the_last_reserved_address() {
        let mut s = HostLocalStore::default();
        let subnet = net("10.212.0.0/22");
        assert_eq!(s.allocate(subnet, "a").unwrap(), Ipv4Addr::new(10, 212, 0, 2));
        assert_eq!(s.allocate(subnet, "b").unwrap(), Ipv4Addr::new(10, 212, 0, 3));
        s.release(Ipv4Addr::new(10, 212, 0, 2));
        // Not the freed .2: the cursor is after .3.
        assert_eq!(s.allocate(subnet, "c").unwrap(), Ipv4Addr::new(10, 212, 0, 4));
    }

    #[test]
    fn a_last_reservation_outside_the_new_range_starts_over_and_old_files_stay() {
        let mut s = HostLocalStore::default();
        let old = s.allocate(net("10.112.3.0/24"), "old").unwrap();
        assert_eq!(
            s.allocate(net("10.212.12.0/22"), "new").unwrap(),
            Ipv4Addr::new(10, 212, 12, 2)
        );
        assert_eq!(s.reserved().collect::<Vec<_>>(), [old, Ipv4Addr::new(10, 212, 12, 2)]);
        assert!(s.allocate(net("10.0.0.0/31"), "x").is_err());
    }
}
