//! The real session's state machine (RFC 4271 §8, passive side), without I/O: messages in,
//! actions out. fabsim listens, so it sends its OPEN as soon as the connection is accepted.
//! The device's configuration (`LiveSession`) decides what the OPEN offers and what the
//! peer's must carry; a wrong AS is refused as the simulated speaker refuses it (Bad Peer AS).

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use crate::engine::{Advertised, BgpMessage, LiveOpen, LiveSession};
use crate::wire::bgp_read;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    OpenSent,
    OpenConfirm,
    Established,
    Closed,
}

/// What the session asks of the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Send(BgpMessage),
    /// Established, with what was negotiated.
    Up(LiveOpen),
    /// Every path the peer now advertises for a prefix (none: withdrawn).
    Routes(Ipv4Net, Vec<Advertised>),
    /// The session ended; the connection is to be closed.
    Down(String),
}

pub struct Fsm {
    pub state: State,
    local_as: u32,
    remote_as: Option<u32>,
    hold_s: u32,
    add_path_rx: bool,
    open: Option<LiveOpen>,
    /// What the peer advertises (Adj-RIB-In before policy): the engine wants whole path sets.
    adj_in: BTreeMap<Ipv4Net, Vec<Advertised>>,
}

/// RFC 6608 subcodes of the Finite State Machine Error (code 5): unexpected message in
/// OpenSent, OpenConfirm, Established.
fn fsm_error(state: State) -> BgpMessage {
    let subcode = match state {
        State::OpenSent => 1,
        State::OpenConfirm => 2,
        _ => 3,
    };
    BgpMessage::Notification { code: 5, subcode }
}

impl Fsm {
    /// A connection was accepted: send the device's OPEN.
    pub fn accept(s: &LiveSession) -> (Fsm, Vec<Action>) {
        let fsm = Fsm {
            state: State::OpenSent,
            local_as: s.local_as,
            remote_as: s.remote_as,
            hold_s: s.hold_s,
            add_path_rx: s.add_path_rx,
            open: None,
            adj_in: BTreeMap::new(),
        };
        let open = BgpMessage::Open {
            asn: s.local_as,
            hold_s: s.hold_s,
            router_id: s.router_id,
            add_path_rx: s.add_path_rx,
            add_path_tx: s.add_path_tx,
        };
        (fsm, vec![Action::Send(open)])
    }

    /// Whether received NLRI carry ADD-PATH path identifiers.
    pub fn receives_path_ids(&self) -> bool {
        self.open.is_some_and(|o| o.peer_tx && self.add_path_rx)
    }

    /// The negotiated hold time (0: no keepalives, no hold timer), once the OPENs crossed.
    pub fn hold_s(&self) -> Option<u32> {
        self.open.map(|o| o.hold_s)
    }

    /// RFC 4271 §10: one third of the hold time.
    pub fn keepalive_s(&self) -> Option<u32> {
        self.hold_s().filter(|h| *h > 0).map(|h| (h / 3).max(1))
    }

    fn close(&mut self, notify: Option<BgpMessage>, why: String) -> Vec<Action> {
        self.state = State::Closed;
        let mut out: Vec<Action> = notify.into_iter().map(Action::Send).collect();
        out.push(Action::Down(why));
        out
    }

    /// A message that could not be read: its NOTIFICATION, and down.
    pub fn malformed(&mut self, e: &bgp_read::Error) -> Vec<Action> {
        self.close(Some(e.notification()), format!("BGP Error: {e}"))
    }

    pub fn hold_expired(&mut self) -> Vec<Action> {
        let notice = BgpMessage::Notification { code: 4, subcode: 0 };
        self.close(Some(notice), "Hold timer expired".into())
    }

    /// fabsim is stopping: Cease, administrative shutdown (RFC 4486).
    pub fn shut_down(&mut self) -> Vec<Action> {
        let notice = BgpMessage::Notification { code: 6, subcode: 2 };
        self.close(Some(notice), "Cease: administrative shutdown".into())
    }

    pub fn receive(&mut self, msg: BgpMessage) -> Vec<Action> {
        match (self.state, msg) {
            (_, BgpMessage::Notification { code, subcode }) => {
                self.close(None, format!("Received: NOTIFICATION {code}/{subcode}"))
            }
            (
                State::OpenSent,
                BgpMessage::Open {
                    asn,
                    hold_s,
                    router_id,
                    add_path_rx,
                    add_path_tx,
                },
            ) => {
                // RFC 4271 §6.2; `remote-as external` takes any AS but our own.
                let bad = match self.remote_as {
                    Some(w) => w != asn,
                    None => asn == self.local_as,
                };
                if bad {
                    let notice = BgpMessage::Notification { code: 2, subcode: 2 };
                    return self.close(Some(notice), format!("BGP Error: Bad peer AS {asn}"));
                }
                self.open = Some(LiveOpen {
                    router_id,
                    hold_s: self.hold_s.min(hold_s),
                    peer_rx: add_path_rx,
                    peer_tx: add_path_tx,
                });
                self.state = State::OpenConfirm;
                vec![Action::Send(BgpMessage::Keepalive)]
            }
            (State::OpenConfirm, BgpMessage::Keepalive) => {
                self.state = State::Established;
                self.open.map(Action::Up).into_iter().collect()
            }
            (State::Established, BgpMessage::Keepalive) => Vec::new(),
            (
                State::Established,
                BgpMessage::Update {
                    withdrawn, announced, ..
                },
            ) => self.update(withdrawn, announced),
            (state, other) => self.close(
                Some(fsm_error(state)),
                format!("BGP Error: unexpected {} in {state:?}", kind(&other)),
            ),
        }
    }

    /// Apply an UPDATE to the Adj-RIB-In (a path id is replaced by announcing it again,
    /// RFC 7911 §3) and report every prefix it touched with its whole path set.
    fn update(&mut self, withdrawn: Vec<(Ipv4Net, u32)>, announced: Vec<(Ipv4Net, Advertised)>) -> Vec<Action> {
        let mut touched = Vec::new();
        for (prefix, id) in withdrawn {
            if let Some(paths) = self.adj_in.get_mut(&prefix) {
                paths.retain(|p| p.id != id);
            }
            touched.push(prefix);
        }
        for (prefix, path) in announced {
            let paths = self.adj_in.entry(prefix).or_default();
            paths.retain(|p| p.id != path.id);
            paths.push(path);
            paths.sort_by_key(|p| p.id);
            touched.push(prefix);
        }
        touched.sort();
        touched.dedup();
        touched
            .into_iter()
            .map(|prefix| {
                let paths = self.adj_in.get(&prefix).cloned().unwrap_or_default();
                if paths.is_empty() {
                    self.adj_in.remove(&prefix);
                }
                Action::Routes(prefix, paths)
            })
            .collect()
    }
}

fn kind(m: &BgpMessage) -> &'static str {
    match m {
        BgpMessage::Open { .. } => "OPEN",
        BgpMessage::Update { .. } => "UPDATE",
        BgpMessage::Notification { .. } => "NOTIFICATION",
        BgpMessage::Keepalive => "KEEPALIVE",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{BgpOrigin, PathAttrs};
    use std::net::Ipv4Addr;
    use std::sync::Arc;

    const PEER_RID: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

    fn session(remote_as: Option<u32>) -> Fsm {
        Fsm::accept(&LiveSession::sample(65011, remote_as, 180)).0
    }

    fn open(asn: u32, hold_s: u32) -> BgpMessage {
        BgpMessage::Open {
            asn,
            hold_s,
            router_id: PEER_RID,
            add_path_rx: true,
            add_path_tx: true,
        }
    }

    #[test]
    fn open_then_keepalive_establishes_with_the_smaller_hold_time() {
        let mut f = session(Some(65000));
        assert_eq!(f.receive(open(65000, 90)), vec![Action::Send(BgpMessage::Keepalive)]);
        let up = f.receive(BgpMessage::Keepalive);
        assert!(matches!(up.as_slice(), [Action::Up(o)] if o.hold_s == 90 && o.peer_tx && o.router_id == PEER_RID));
        assert_eq!(f.keepalive_s(), Some(30));
        assert!(f.receives_path_ids());
    }

    #[test]
    fn a_wrong_peer_as_gets_bad_peer_as() {
        let mut f = session(Some(65000));
        let a = f.receive(open(65099, 90));
        assert_eq!(a[0], Action::Send(BgpMessage::Notification { code: 2, subcode: 2 }));
        assert!(matches!(&a[1], Action::Down(w) if w.contains("Bad peer AS 65099")));
        assert_eq!(f.state, State::Closed);
    }

    #[test]
    fn updates_report_whole_path_sets_per_prefix() {
        let mut f = session(Some(65000));
        f.receive(open(65000, 90));
        f.receive(BgpMessage::Keepalive);
        let attrs = Arc::new(PathAttrs {
            as_path: vec![65000],
            origin: BgpOrigin::Igp,
            local_pref: None,
            med: None,
        });
        let path = |id| Advertised {
            id,
            next_hop: PEER_RID,
            attrs: attrs.clone(),
        };
        let p: Ipv4Net = "10.66.111.0/24".parse().unwrap();
        let r = f.receive(BgpMessage::Update {
            add_path: true,
            withdrawn: vec![],
            announced: vec![(p, path(1)), (p, path(2))],
        });
        assert_eq!(r, vec![Action::Routes(p, vec![path(1), path(2)])]);
        let r = f.receive(BgpMessage::Update {
            add_path: true,
            withdrawn: vec![(p, 1)],
            announced: vec![],
        });
        assert_eq!(r, vec![Action::Routes(p, vec![path(2)])]);
    }

    #[test]
    fn an_update_before_established_is_an_fsm_error() {
        let mut f = session(Some(65000));
        let a = f.receive(BgpMessage::Update {
            add_path: false,
            withdrawn: vec![],
            announced: vec![],
        });
        assert_eq!(a[0], Action::Send(BgpMessage::Notification { code: 5, subcode: 1 }));
    }
}
