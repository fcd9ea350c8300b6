//! The OSPF wire log, for captures (`Engine::record_ospf_wire`): what the OSPF runtime puts on
//! the links of tapped interfaces, as values the `wire` module encodes — each hello exactly as
//! the sending interface holds its state when the `Hello` event fires, and the LS Updates of
//! the flooding the LSDB changes imply. Kept only when a capture asks for it, and only for
//! packets a tapped interface sees, so an uncaptured run does no work here.
//!
//! What the runtime abstracts is not invented: the database exchange of a new adjacency (DD,
//! LS Request and the LS Updates answering them) is one delay, so it puts nothing on the wire;
//! flooding is instantaneous and reliable, so each change of the LSDB is flooded at the instant
//! a recompute sees it, hop by hop as RFC 2328 §13.3 sends it, and no LS Acknowledgment
//! (§13.5) or retransmission is logged. Sequence numbers start at InitialSequenceNumber and
//! grow by one per new instance (§12.1.6); LS age is InfTransDelay (1 s) per transmission
//! (§13.3 step 5); an LSA its living originator no longer has is flushed at MaxAge (§14.1).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::Ipv4Addr;

use super::{IfSm, Link, Lsdb, Ospf};
use crate::engine::state::{NbrState, State};
use crate::model::{DeviceId, IfId, Network};

/// The Options field fabsim's routers send (RFC 2328 A.2): only the E-bit — one area, which
/// is not a stub area, so AS-external LSAs flood through it.
pub const OPTIONS_E: u8 = 0x02;
/// RFC 2328 §12.1.6 and appendix B: sequence numbers are signed 32-bit integers from
/// InitialSequenceNumber (-N + 1) up to MaxSequenceNumber (N - 1).
const INITIAL_SEQUENCE: u32 = 0x8000_0001;
const MAX_AGE_S: u16 = 3600;
const INF_TRANS_DELAY_S: u16 = 1;

/// The multicast group a packet is sent to (RFC 2328 A.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OspfDest {
    /// 224.0.0.5: hellos, and flooding by a DR/BDR or on a point-to-point network.
    AllSpfRouters,
    /// 224.0.0.6: flooding by any other router of a broadcast network (§13.3).
    AllDRouters,
}

/// One OSPF packet as it left an interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OspfWireRecord {
    pub at_ms: u64,
    /// The interface it left by, its address and the sender's router id.
    pub iface: IfId,
    pub src: Ipv4Addr,
    pub router_id: Ipv4Addr,
    pub dst: OspfDest,
    /// The tapped interfaces the packet crossed: the sending one, and the up members of its
    /// link or segment, which receive every multicast frame whether or not they run OSPF.
    pub seen_on: Vec<IfId>,
    pub packet: OspfPacket,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OspfPacket {
    Hello(OspfHello),
    LsUpdate(Vec<OspfLsa>),
}

/// A hello's fields (RFC 2328 A.3.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OspfHello {
    pub mask: Ipv4Addr,
    pub hello_interval_s: u16,
    pub options: u8,
    pub priority: u8,
    pub dead_interval_s: u32,
    /// 0.0.0.0 when none (and always on point-to-point networks).
    pub dr: Ipv4Addr,
    pub bdr: Ipv4Addr,
    /// The router ids of every neighbour heard on the interface (§9.5).
    pub neighbors: Vec<Ipv4Addr>,
}

/// One LSA: the header fields (RFC 2328 A.4.1) and its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OspfLsa {
    pub age_s: u16,
    pub options: u8,
    pub ls_id: Ipv4Addr,
    pub adv_router: Ipv4Addr,
    pub seq: u32,
    pub body: LsaBody,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LsaBody {
    /// Type 1 (A.4.2); `asbr` is the E bit.
    Router { asbr: bool, links: Vec<RouterLink> },
    /// Type 2 (A.4.3): the network's mask and its attached routers.
    Network { mask: Ipv4Addr, attached: Vec<Ipv4Addr> },
    /// Type 5 (A.4.5), forwarding address and route tag 0.
    External { mask: Ipv4Addr, e2: bool, metric: u32 },
}

impl LsaBody {
    /// The LS type field.
    pub fn ls_type(&self) -> u8 {
        match self {
            LsaBody::Router { .. } => 1,
            LsaBody::Network { .. } => 2,
            LsaBody::External { .. } => 5,
        }
    }
}

/// A router-LSA link (A.4.2): type 1 point-to-point (neighbour's router id, own address),
/// 2 transit (DR's address, own address), 3 stub (network, mask).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RouterLink {
    pub kind: u8,
    pub id: Ipv4Addr,
    pub data: Ipv4Addr,
    pub metric: u16,
}

/// An LSA's identity: LS type, link state ID, advertising router (§12.1).
type LsaKey = (u8, Ipv4Addr, Ipv4Addr);

/// The log: the tapped interfaces, the packets, and the LSDB as last flooded.
#[derive(Clone, Debug)]
pub(crate) struct WireLog {
    taps: BTreeSet<IfId>,
    pub(crate) records: Vec<OspfWireRecord>,
    flooded: BTreeMap<LsaKey, (u32, LsaBody)>,
}

impl WireLog {
    pub(crate) fn new(taps: BTreeSet<IfId>) -> Self {
        WireLog {
            taps,
            records: Vec::new(),
            flooded: BTreeMap::new(),
        }
    }

    pub(super) fn taps(&self, iface: IfId) -> bool {
        self.taps.contains(&iface)
    }

    /// The tapped interfaces a multicast frame sent on `from` crosses.
    fn seen_on(&self, net: &Network, st: &State, from: IfId) -> Vec<IfId> {
        let up = |i: &IfId| st.ifaces.get(i.idx()).is_some_and(|s| s.up);
        std::iter::once(from)
            .chain(net.l2_peers(from).filter(up))
            .filter(|i| self.taps.contains(i))
            .collect()
    }
}

impl Ospf {
    /// Log the hello `from` sends now, if a tapped interface sees it.
    pub(super) fn log_hello(&mut self, net: &Network, st: &State, now: u64, from: IfId, router_id: Ipv4Addr) {
        let Some(log) = &self.wire else { return };
        let seen_on = log.seen_on(net, st, from);
        let o = &self.ifs[from.idx()];
        let (Some(addr), false) = (o.addr, seen_on.is_empty()) else {
            return;
        };
        let profile = &net.device(net.iface(from).device).profile;
        let unset = Ipv4Addr::UNSPECIFIED;
        let hello = OspfHello {
            mask: addr.netmask(),
            hello_interval_s: u16::try_from(profile.ospf_hello_ms / 1000).unwrap_or(u16::MAX),
            options: OPTIONS_E,
            priority: o.prio,
            dead_interval_s: u32::try_from(profile.ospf_dead_ms / 1000).unwrap_or(u32::MAX),
            dr: o.dr.unwrap_or(unset),
            bdr: o.bdr.unwrap_or(unset),
            neighbors: o.nbrs.keys().copied().collect(),
        };
        let record = OspfWireRecord {
            at_ms: now,
            iface: from,
            src: addr.addr(),
            router_id,
            dst: OspfDest::AllSpfRouters,
            seen_on,
            packet: OspfPacket::Hello(hello),
        };
        if let Some(log) = &mut self.wire {
            log.records.push(record);
        }
    }

    /// Flood what changed in `lsdb` since the last call: new instances at the next sequence
    /// number, and the LSAs a living originator dropped at MaxAge. Each LSA travels from its
    /// originator over the full adjacencies; every router sends it on each interface with an
    /// adjacency other than the one it came from (§13.3), and what a tapped interface sees is
    /// logged as one LS Update per sending interface.
    pub(super) fn log_flooding(&mut self, net: &Network, st: &State, now: u64, lsdb: &Lsdb) {
        let Some(log) = &self.wire else { return };
        let current = lsas_of(lsdb);
        let living: BTreeSet<Ipv4Addr> = self.routers.iter().flatten().map(|r| r.rid).collect();
        // (key, sequence number, body, flushed)
        let mut changed = Vec::new();
        for (key, body) in &current {
            match log.flooded.get(key) {
                Some((_, old)) if old == body => {}
                Some((seq, _)) => changed.push((*key, next_sequence(*seq), body.clone(), false)),
                None => changed.push((*key, INITIAL_SEQUENCE, body.clone(), false)),
            }
        }
        for (key, (seq, body)) in &log.flooded {
            if !current.contains_key(key) && living.contains(&key.2) {
                changed.push((*key, *seq, body.clone(), true));
            }
        }
        let mut packets: BTreeMap<(IfId, OspfDest), Vec<OspfLsa>> = BTreeMap::new();
        for (key, seq, body, flushed) in &changed {
            for send in self.flood_from(net, key.2) {
                let age_s = if *flushed {
                    MAX_AGE_S
                } else {
                    send.depth
                        .saturating_add(1)
                        .saturating_mul(INF_TRANS_DELAY_S)
                        .min(MAX_AGE_S)
                };
                packets.entry((send.iface, send.dst)).or_default().push(OspfLsa {
                    age_s,
                    options: OPTIONS_E,
                    ls_id: key.1,
                    adv_router: key.2,
                    seq: *seq,
                    body: body.clone(),
                });
            }
        }
        let Some(log) = &mut self.wire else { return };
        for (key, seq, body, flushed) in changed {
            if flushed {
                log.flooded.remove(&key);
            } else {
                log.flooded.insert(key, (seq, body));
            }
        }
        for ((iface, dst), lsas) in packets {
            let seen_on = log.seen_on(net, st, iface);
            let (Some(addr), Some(r)) = (
                self.ifs[iface.idx()].addr,
                self.routers[net.iface(iface).device.idx()].as_ref(),
            ) else {
                continue;
            };
            if seen_on.is_empty() {
                continue;
            }
            log.records.push(OspfWireRecord {
                at_ms: now,
                iface,
                src: addr.addr(),
                router_id: r.rid,
                dst,
                seen_on,
                packet: OspfPacket::LsUpdate(lsas),
            });
        }
    }

    /// The transmissions flooding an LSA of `origin` makes (§13.3), found breadth-first over
    /// the full adjacencies: each router takes the LSA from the first neighbour that sends it
    /// (ties in interface and router-id order) and sends it on every interface where it has
    /// an adjacency other than that neighbour — except back onto a broadcast network it came
    /// from when the sender was its DR or BDR, or when it is the BDR there.
    fn flood_from(&self, net: &Network, origin: Ipv4Addr) -> Vec<Send> {
        let Some(start) = self.device_of_rid(origin) else {
            return Vec::new();
        };
        // Per reached router: hops from the originator, and the interface and neighbour
        // address it received the LSA on.
        let mut reached: BTreeMap<DeviceId, (u16, Option<(IfId, Ipv4Addr)>)> = BTreeMap::new();
        reached.insert(start, (0, None));
        let mut queue = VecDeque::from([start]);
        let mut sends = Vec::new();
        while let Some(dev) = queue.pop_front() {
            let Some(&(depth, came)) = reached.get(&dev) else {
                continue;
            };
            for &i in &net.device(dev).ifaces {
                let o = &self.ifs[i.idx()];
                let adjacent: Vec<(Ipv4Addr, IfId)> = o
                    .nbrs
                    .values()
                    .filter(|n| n.state == NbrState::Full && Some((i, n.addr)) != came)
                    .map(|n| (n.addr, n.iface))
                    .collect();
                let back_onto_lan = !o.p2p && came.is_some_and(|(c, _)| c == i);
                let from_designated = came.is_some_and(|(_, a)| o.dr == Some(a) || o.bdr == Some(a));
                if adjacent.is_empty() || (back_onto_lan && (from_designated || o.state == IfSm::Backup)) {
                    continue;
                }
                let dst = match o.state {
                    IfSm::DrOther | IfSm::Waiting if !o.p2p => OspfDest::AllDRouters,
                    _ => OspfDest::AllSpfRouters,
                };
                sends.push(Send { iface: i, dst, depth });
                for (_, peer_if) in adjacent {
                    let peer = net.iface(peer_if).device;
                    let my_addr = o.addr.map(|a| a.addr());
                    if let (false, Some(a)) = (reached.contains_key(&peer), my_addr) {
                        reached.insert(peer, (depth + 1, Some((peer_if, a))));
                        queue.push_back(peer);
                    }
                }
            }
        }
        sends
    }

    fn device_of_rid(&self, rid: Ipv4Addr) -> Option<DeviceId> {
        self.routers
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.rid == rid))
            .map(|d| DeviceId(d as u32))
    }
}

/// The sequence number of the next instance: one more, as the signed number it is, stopping
/// at MaxSequenceNumber (0x7fffffff; the flush and restart of §12.1.6 is not modelled).
fn next_sequence(seq: u32) -> u32 {
    (seq as i32).saturating_add(1) as u32
}

/// One transmission of a flood: out of `iface`, to `dst`, by a router `depth` hops from the
/// originator.
struct Send {
    iface: IfId,
    dst: OspfDest,
    depth: u16,
}

/// The LSDB's LSAs in their wire form, by key.
fn lsas_of(db: &Lsdb) -> BTreeMap<LsaKey, LsaBody> {
    let metric = |c: u32| u16::try_from(c).unwrap_or(u16::MAX);
    let asbrs: BTreeSet<Ipv4Addr> = db.externals.keys().map(|(_, asbr)| *asbr).collect();
    let mut out = BTreeMap::new();
    for (rid, lsa) in &db.routers {
        let links = lsa
            .links
            .iter()
            .map(|l| match l {
                Link::P2p { nbr, my_addr, cost, .. } => RouterLink {
                    kind: 1,
                    id: *nbr,
                    data: *my_addr,
                    metric: metric(*cost),
                },
                Link::Transit { dr, my_addr, cost, .. } => RouterLink {
                    kind: 2,
                    id: *dr,
                    data: *my_addr,
                    metric: metric(*cost),
                },
                Link::Stub { net, cost } => RouterLink {
                    kind: 3,
                    id: net.network(),
                    data: net.netmask(),
                    metric: metric(*cost),
                },
            })
            .collect();
        let body = LsaBody::Router {
            asbr: asbrs.contains(rid),
            links,
        };
        out.insert((1, *rid, *rid), body);
    }
    for (dr_addr, n) in &db.networks {
        let body = LsaBody::Network {
            mask: n.net.netmask(),
            attached: n.attached.clone(),
        };
        out.insert((2, *dr_addr, n.origin), body);
    }
    for ((prefix, asbr), e) in &db.externals {
        let body = LsaBody::External {
            mask: prefix.netmask(),
            e2: !e.e1,
            metric: e.metric,
        };
        out.insert((5, prefix.network(), *asbr), body);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn sequence_numbers_count_up_as_signed_numbers() {
        assert_eq!(super::next_sequence(super::INITIAL_SEQUENCE), 0x8000_0002);
        assert_eq!(super::next_sequence(0xffff_ffff), 0);
        assert_eq!(super::next_sequence(0x7fff_ffff), 0x7fff_ffff);
    }
}
