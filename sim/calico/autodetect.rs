//! calico-node's IPv4 autodetection (`IP=autodetect`, `IP_AUTODETECTION_METHOD`): which host
//! address becomes the node's BGP address and IPIP/VXLAN endpoint.
//!
//! From calico-reference.md §4 (`node/pkg/lifecycle/startup/autodetection/`): `first-found`
//! walks the interfaces from the highest kernel index down, skipping Calico's default
//! exclusions, and takes the first global-unicast address with its prefix length; `interface=`
//! and `skip-interface=` change the name filter; `cidr=` filters by address;
//! `kubernetes-internal-ip` takes the Node's InternalIP; `can-reach=` takes the source address
//! the kernel would use towards the destination.

use std::net::Ipv4Addr;
use std::sync::LazyLock;

use ipnet::Ipv4Net;
use regex::Regex;

/// Interface names `first-found` and `skip-interface=` never consider (`DEFAULT_INTERFACES_TO_EXCLUDE`).
const DEFAULT_EXCLUDES: &[&str] = &[
    "^docker.*",
    "^cbr.*",
    "^dummy.*",
    "^podman.*",
    "^virbr.*",
    "^lxcbr.*",
    "^veth.*",
    "^lo",
    "^br-.*",
    "^cali.*",
    "^tunl.*",
    "^flannel.*",
    "^kube-ipvs.*",
    "^cni.*",
    "^vxlan\\.calico.*",
    "^vxlan-v6\\.calico.*",
    "^wireguard\\.cali.*",
    "^wg-v6\\.cali.*",
    "^nodelocaldns.*",
];

/// One host interface as the detector sees it: name, kernel index, IPv4 address if any.
#[derive(Clone, Debug)]
pub struct HostIface {
    pub name: String,
    pub ifindex: u32,
    pub addr: Option<Ipv4Net>,
}

/// What the detector may ask the host beyond its interfaces.
pub struct HostFacts<'a> {
    pub ifaces: &'a [HostIface],
    /// The Kubernetes Node's InternalIP.
    pub internal_ip: Option<Ipv4Addr>,
    /// The source address the kernel picks towards a destination (`ip route get`), if routed.
    pub source_towards: &'a dyn Fn(Ipv4Addr) -> Option<Ipv4Addr>,
}

/// The address `method` selects, or the reason calico-node gives up.
pub fn detect(method: &str, host: &HostFacts<'_>) -> Result<Ipv4Net, String> {
    let method = method.trim();
    let failed = || "Failed to autodetect an IPv4 address".to_string();
    if method.is_empty() || method == "first-found" {
        return first_matching(host.ifaces, |n| !excluded(n, &[]), |_| true).ok_or_else(failed);
    }
    if let Some(list) = method.strip_prefix("interface=") {
        let res = regexes(list)?;
        return first_matching(host.ifaces, |n| res.iter().any(|r| r.is_match(n)), |_| true).ok_or_else(failed);
    }
    if let Some(list) = method.strip_prefix("skip-interface=") {
        let res = regexes(list)?;
        return first_matching(host.ifaces, |n| !excluded(n, &res), |_| true).ok_or_else(failed);
    }
    if let Some(list) = method.strip_prefix("cidr=") {
        let cidrs = list
            .split(',')
            .map(|c| {
                c.trim()
                    .parse::<Ipv4Net>()
                    .map_err(|_| format!("invalid CIDR {c:?} in {method}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return first_matching(host.ifaces, |_| true, |a| cidrs.iter().any(|c| c.contains(&a))).ok_or_else(failed);
    }
    if method == "kubernetes-internal-ip" {
        let ip = host.internal_ip.ok_or_else(failed)?;
        // The prefix comes from a host interface carrying the address; else a bare /32.
        let on_host = host.ifaces.iter().filter_map(|i| i.addr).find(|a| a.addr() == ip);
        return Ok(on_host.unwrap_or_else(|| Ipv4Net::from(ip)));
    }
    if let Some(dest) = method.strip_prefix("can-reach=") {
        let dest: Ipv4Addr = dest
            .trim()
            .parse()
            .map_err(|_| format!("can-reach={dest}: fabsim resolves no host names; give an IPv4 address"))?;
        let src = (host.source_towards)(dest).ok_or_else(failed)?;
        return host
            .ifaces
            .iter()
            .filter_map(|i| i.addr)
            .find(|a| a.addr() == src)
            .ok_or_else(failed);
    }
    Err(format!("Invalid IP autodetection method: {method}"))
}

fn regexes(list: &str) -> Result<Vec<Regex>, String> {
    list.split(',')
        .map(|r| Regex::new(r.trim()).map_err(|e| format!("invalid interface regex {r:?}: {e}")))
        .collect()
}

/// `DEFAULT_EXCLUDES` compiled once: compiling them per interface was 13% of the seed-lab
/// replay (BENCHMARKS.md).
static DEFAULT_EXCLUDE_RES: LazyLock<Vec<Regex>> =
    LazyLock::new(|| DEFAULT_EXCLUDES.iter().filter_map(|p| Regex::new(p).ok()).collect());

fn excluded(name: &str, extra: &[Regex]) -> bool {
    DEFAULT_EXCLUDE_RES.iter().chain(extra).any(|r| r.is_match(name))
}

/// Walks interfaces from the highest ifindex down (Calico reverses the kernel's list) and
/// returns the first global-unicast address passing both filters.
fn first_matching(
    ifaces: &[HostIface],
    name_ok: impl Fn(&str) -> bool,
    addr_ok: impl Fn(Ipv4Addr) -> bool,
) -> Option<Ipv4Net> {
    let mut walk: Vec<&HostIface> = ifaces.iter().collect();
    walk.sort_by_key(|i| std::cmp::Reverse(i.ifindex));
    walk.into_iter()
        .filter(|i| name_ok(&i.name))
        .filter_map(|i| i.addr)
        .find(|a| global_unicast(a.addr()) && addr_ok(a.addr()))
}

/// Go's `IP.IsGlobalUnicast` for IPv4: not unspecified, loopback, link-local, multicast or broadcast.
fn global_unicast(a: Ipv4Addr) -> bool {
    !(a.is_unspecified() || a.is_loopback() || a.is_link_local() || a.is_multicast() || a.is_broadcast())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k_w3() -> Vec<HostIface> {
        let i = |name: &str, ifindex, addr: Option<&str>| HostIface {
            name: name.into(),
            ifindex,
            addr: addr.map(|a| a.parse().unwrap()),
        };
        // seed-lab.md s1: k-w3 `ip link` and `birdcl show interface`.
        vec![
            i("lo", 1, Some("127.0.0.1/8")),
            i("ens3", 2, Some("10.3.33.1/31")),
            i("ens4", 3, None),
            i("ens5", 4, Some("10.0.137.142/24")),
            i("tunl0", 5, Some("10.66.122.192/32")),
        ]
    }

    fn facts(ifaces: &[HostIface]) -> HostFacts<'_> {
        HostFacts {
            ifaces,
            internal_ip: Some("10.3.33.1".parse().unwrap()),
            source_towards: &|d: Ipv4Addr| {
                Some(
                    if d.octets()[0] == 10 {
                        "10.3.33.1"
                    } else {
                        "10.0.137.142"
                    }
                    .parse()
                    .unwrap(),
                )
            },
        }
    }

    #[test]
    fn first_found_takes_the_highest_index_interface_with_an_address() {
        let ifs = k_w3();
        assert_eq!(detect("", &facts(&ifs)).unwrap().to_string(), "10.0.137.142/24");
        assert_eq!(
            detect("first-found", &facts(&ifs)).unwrap().to_string(),
            "10.0.137.142/24"
        );
    }

    #[test]
    fn the_other_methods() {
        let ifs = k_w3();
        let f = facts(&ifs);
        assert_eq!(detect("interface=ens3", &f).unwrap().to_string(), "10.3.33.1/31");
        assert_eq!(detect("skip-interface=ens5", &f).unwrap().to_string(), "10.3.33.1/31");
        assert_eq!(detect("cidr=10.0.0.0/16", &f).unwrap().to_string(), "10.0.137.142/24");
        assert_eq!(
            detect("kubernetes-internal-ip", &f).unwrap().to_string(),
            "10.3.33.1/31"
        );
        assert_eq!(detect("can-reach=8.8.8.8", &f).unwrap().to_string(), "10.0.137.142/24");
        assert_eq!(detect("can-reach=10.0.11.1", &f).unwrap().to_string(), "10.3.33.1/31");
        assert_eq!(
            detect("interface=eth9", &f).unwrap_err(),
            "Failed to autodetect an IPv4 address"
        );
        assert!(detect("nearest", &f)
            .unwrap_err()
            .contains("Invalid IP autodetection method"));
    }
}
