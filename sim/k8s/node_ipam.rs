//! kube-controller-manager's node IPAM (`--allocate-node-cidrs`, the range allocator): the
//! cluster CIDR cut into `--node-cidr-mask-size` blocks, an in-memory bitmap of used blocks and
//! a rotating `nextCandidate` cursor, as `pkg/controller/nodeipam/ipam/cidrset/cidr_set.go`
//! keeps them (`k8s-cidr-migrations.md` §1.7):
//!
//! - `AllocateNext` scans from the cursor (not from the lowest index), takes the first free
//!   block and moves the cursor past it, wrapping around;
//! - `Occupy` / `Release` work on the *blocks a CIDR touches*: a podCIDR narrower than a block
//!   (a /24 left in a /22 cluster) marks, or clears, the whole containing block — even while
//!   other nodes still hold /24s inside it;
//! - the bitmap is rebuilt from the Nodes' podCIDRs only when the controller starts (a restart
//!   or a leader change), with the cursor back at 0; a podCIDR outside the cluster CIDR then
//!   stops node IPAM from starting.

use ipnet::Ipv4Net;

/// `ErrCIDRRangeNoCIDRsRemaining`'s text.
pub const NO_CIDRS_REMAINING: &str =
    "CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range";

/// cidrset's limit on `node mask − cluster prefix` (its bitmap is not compressed).
const MAX_DIFF: u8 = 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeAllocator {
    cluster: Ipv4Net,
    node_mask: u8,
    used: Vec<bool>,
    next_candidate: usize,
    /// Why the controller could not start (a podCIDR it could not mark as used); nothing is
    /// allocated until it starts cleanly.
    failed: Option<String>,
}

impl RangeAllocator {
    /// The allocator of a freshly started kube-controller-manager with no nodes yet.
    pub fn new(cluster: Ipv4Net, node_mask: u8) -> Result<RangeAllocator, String> {
        if node_mask < cluster.prefix_len() || node_mask > 32 || node_mask - cluster.prefix_len() > MAX_DIFF {
            return Err(format!(
                "New CIDR set failed; the node CIDR size is too big: /{node_mask} in {cluster}"
            ));
        }
        Ok(RangeAllocator {
            cluster: cluster.trunc(),
            node_mask,
            used: vec![false; 1 << (node_mask - cluster.prefix_len())],
            next_candidate: 0,
            failed: None,
        })
    }

    /// The allocator after a (re)start: the bitmap rebuilt from the nodes' podCIDRs in node
    /// order, the cursor at 0. The first podCIDR out of range stops node IPAM, with the error
    /// kube-controller-manager logs.
    pub fn started(cluster: Ipv4Net, node_mask: u8, pod_cidrs: &[(&str, Ipv4Net)]) -> Result<RangeAllocator, String> {
        let mut a = RangeAllocator::new(cluster, node_mask)?;
        for (node, cidr) in pod_cidrs {
            if let Err(e) = a.occupy(*cidr) {
                a.failed = Some(format!(
                    "failed to mark cidr[{cidr}] at idx [0] as occupied for node: {node}: {e}"
                ));
                break;
            }
        }
        Ok(a)
    }

    /// Why node IPAM did not start, if it did not.
    pub fn failure(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// The next free block from the cursor on.
    pub fn allocate_next(&mut self) -> Result<Ipv4Net, String> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        let n = self.used.len();
        let free = (0..n)
            .map(|i| (i + self.next_candidate) % n)
            .find(|c| !self.used[*c])
            .ok_or_else(|| format!("failed to allocate cidr from cluster cidr at idx:0: {NO_CIDRS_REMAINING}"))?;
        self.next_candidate = (free + 1) % n;
        self.used[free] = true;
        Ok(self.block(free))
    }

    /// `filterOutServiceRange`: a service range that overlaps the cluster CIDR has the blocks it
    /// touches marked used, so no node gets a podCIDR inside it (a disjoint one changes nothing).
    pub fn filter_out(&mut self, service: Ipv4Net) {
        // Err only when the ranges do not overlap: then there is nothing to filter.
        let _ = self.occupy(service);
    }

    /// Marks every block `cidr` touches as used.
    pub fn occupy(&mut self, cidr: Ipv4Net) -> Result<(), String> {
        let (begin, end) = self.indices(cidr)?;
        self.used[begin..=end].iter_mut().for_each(|u| *u = true);
        Ok(())
    }

    /// Clears every block `cidr` touches (a deleted node's podCIDR).
    pub fn release(&mut self, cidr: Ipv4Net) -> Result<(), String> {
        let (begin, end) = self.indices(cidr)?;
        self.used[begin..=end].iter_mut().for_each(|u| *u = false);
        Ok(())
    }

    /// The blocks `cidr` touches that the bitmap marks free (none for a CIDR out of range).
    pub fn free_blocks_of(&self, cidr: Ipv4Net) -> Vec<Ipv4Net> {
        let Ok((begin, end)) = self.indices(cidr) else {
            return Vec::new();
        };
        (begin..=end)
            .filter(|i| !self.used[*i])
            .map(|i| self.block(i))
            .collect()
    }

    /// How many blocks are free.
    pub fn free_count(&self) -> usize {
        self.used.iter().filter(|u| !**u).count()
    }

    /// The cluster CIDR and node mask it allocates with.
    pub fn settings(&self) -> (Ipv4Net, u8) {
        (self.cluster, self.node_mask)
    }

    fn block(&self, index: usize) -> Ipv4Net {
        let base = u32::from(self.cluster.network());
        let addr = base | ((index as u32) << (32 - u32::from(self.node_mask)));
        Ipv4Net::new(addr.into(), self.node_mask).unwrap_or(self.cluster)
    }

    /// The first and last block index `cidr` touches (cidrset's `getBeginningAndEndIndices`).
    fn indices(&self, cidr: Ipv4Net) -> Result<(usize, usize), String> {
        let overlaps = self.cluster.contains(&cidr.network()) || cidr.contains(&self.cluster.network());
        if !overlaps {
            return Err(format!("cidr {cidr} is out the range of cluster cidr {}", self.cluster));
        }
        let last = self.used.len() - 1;
        if cidr.prefix_len() <= self.cluster.prefix_len() {
            return Ok((0, last));
        }
        let index = |addr: u32| {
            let offset = addr.wrapping_sub(u32::from(self.cluster.network()));
            (offset >> (32 - u32::from(self.node_mask))) as usize
        };
        let begin = index(u32::from(cidr.network()));
        let end = if cidr.prefix_len() < self.node_mask {
            index(u32::from(cidr.broadcast()))
        } else {
            begin
        };
        Ok((begin, end.min(last)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    /// Seed 000's re-registration without a kube-controller-manager restart in between: each
    /// node is deleted (its podCIDR released) and joins again (allocated).
    fn reregister(a: &mut RangeAllocator, old: &[Ipv4Net]) -> Vec<String> {
        old.iter()
            .map(|cidr| {
                a.release(*cidr).unwrap();
                a.allocate_next().unwrap().to_string()
            })
            .collect()
    }

    #[test]
    fn the_four_node_stand_gets_consecutive_22s_and_block_0_ends_up_free() {
        let olds: Vec<Ipv4Net> = (0..4).map(|i| net(&format!("10.212.{i}.0/24"))).collect();
        let names = ["node-0", "node-1", "node-2", "node-3"];
        let nodes: Vec<(&str, Ipv4Net)> = names.iter().copied().zip(olds.iter().copied()).collect();
        let mut a = RangeAllocator::started(net("10.212.0.0/16"), 22, &nodes).unwrap();
        assert_eq!(
            reregister(&mut a, &olds),
            ["10.212.0.0/22", "10.212.4.0/22", "10.212.8.0/22", "10.212.12.0/22"]
        );
        // node-1's release of 10.212.1.0/24 cleared block 0 while node-0 owns it.
        assert!(!a.used[0]);
    }

    #[test]
    fn the_ten_node_cluster_skips_the_blocks_its_old_24s_still_mark() {
        let olds: Vec<Ipv4Net> = (0..10).map(|i| net(&format!("10.212.{i}.0/24"))).collect();
        let names: Vec<String> = (0..10).map(|i| format!("node-{i}")).collect();
        let nodes: Vec<(&str, Ipv4Net)> = names.iter().map(String::as_str).zip(olds.iter().copied()).collect();
        let mut a = RangeAllocator::started(net("10.212.0.0/16"), 22, &nodes).unwrap();
        let got = reregister(&mut a, &olds);
        let want: Vec<String> = [0, 12, 16, 20, 24, 28, 32, 36, 40, 44]
            .iter()
            .map(|o| format!("10.212.{o}.0/22"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_cursor_moves_on_past_a_released_gap_and_wraps() {
        let mut a = RangeAllocator::new(net("10.66.0.0/22"), 24).unwrap();
        let first: Vec<String> = (0..3).map(|_| a.allocate_next().unwrap().to_string()).collect();
        assert_eq!(first, ["10.66.0.0/24", "10.66.1.0/24", "10.66.2.0/24"]);
        a.release(net("10.66.0.0/24")).unwrap();
        assert_eq!(a.allocate_next().unwrap(), net("10.66.3.0/24"));
        assert_eq!(a.allocate_next().unwrap(), net("10.66.0.0/24"));
        assert_eq!(
            a.allocate_next().unwrap_err(),
            format!("failed to allocate cidr from cluster cidr at idx:0: {NO_CIDRS_REMAINING}")
        );
    }

    #[test]
    fn a_pod_cidr_outside_the_cluster_cidr_stops_node_ipam() {
        let mut a = RangeAllocator::started(net("10.212.0.0/16"), 22, &[("node-0", net("10.112.0.0/24"))]).unwrap();
        assert_eq!(
            a.allocate_next().unwrap_err(),
            "failed to mark cidr[10.112.0.0/24] at idx [0] as occupied for node: node-0: \
             cidr 10.112.0.0/24 is out the range of cluster cidr 10.212.0.0/16"
        );
        assert!(RangeAllocator::new(net("10.0.0.0/8"), 25).is_err());
        assert!(RangeAllocator::new(net("10.0.0.0/16"), 12).is_err());
    }
}
