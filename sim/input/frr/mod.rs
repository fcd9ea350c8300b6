//! FRR 8.4 integrated configuration (`frr.conf`, as vtysh writes it) → the model, for a Linux
//! host running FRR: zebra's interfaces, addresses and static routes, ospfd's `router ospf`,
//! bgpd's `router bgp` (flavour FRR), prefix-lists and route-maps. Records configuration; never
//! computes routing (route-maps are evaluated by the engine).
//!
//! Modes as vtysh reads a file: `interface`, `router ospf`, `router bgp` and its
//! `address-family ipv4 unicast`, `route-map`. `exit`, `exit-address-family` and `end` leave
//! them, and a line that is not a command of the current mode is read in the enclosing one, so a
//! file without `exit` lines reads the same. Keywords are taken as vtysh writes them (in full).
//! Valid FRR that fabsim does not model is a warning with its line; a line FRR would reject is
//! an error naming what was expected.

mod bgp;
mod ignored;
mod ospf;
mod policy;

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::eos::{tokenize, Tok};
use super::topology::{add_linux_iface, find_iface};
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::model::policy::RoutePolicies;
use crate::model::{AddrConfig, DeviceId, IfId, Network, RouteOrigin, StaticRoute, ZEBRA_ROUTE_METRIC};

pub use ignored::IGNORED_BY_DESIGN;

/// Apply `frr.conf` to the Linux host `dev`. Interfaces the file names that the host does not
/// have yet are created (zebra keeps configuration for interfaces that appear later).
pub fn apply_frr(
    net: &mut Network,
    dev: DeviceId,
    text: &str,
    origin: &TextOrigin,
) -> Result<Vec<Diagnostic>, InputError> {
    super::check_device(net, dev, origin)?;
    let mut ctx = Ctx {
        net,
        dev,
        origin,
        idx: 0,
        mode: Mode::Global,
        warnings: Vec::new(),
        errors: Vec::new(),
        bgp: None,
        policies: RoutePolicies::default(),
        ospf_areas: Vec::new(),
        datacenter: false,
    };
    for (idx, line) in text.lines().enumerate() {
        ctx.idx = idx;
        ctx.line(line);
    }
    ctx.finish()
}

/// Where a line stops making sense to FRR, and what was expected there.
pub(super) struct Bad {
    pub col0: usize,
    pub msg: String,
}

/// `None`: not a command of this mode (try the enclosing one).
pub(super) type Handled = Option<Result<(), Bad>>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Mode {
    Global,
    Interface(IfId),
    Ospf,
    Bgp,
    /// `address-family ipv4 unicast`.
    BgpAf,
    /// Another address family (ipv6, evpn, …): warned once, its lines skipped.
    BgpAfOther,
    /// `route-map NAME permit|deny SEQ`: the entry being filled.
    RouteMap(String, u32),
    /// A block fabsim does not model (`router isis`, `vrf`, `line vty`): its indented lines.
    Skipped,
}

impl Mode {
    fn parent(&self) -> Mode {
        match self {
            Mode::BgpAf | Mode::BgpAfOther => Mode::Bgp,
            _ => Mode::Global,
        }
    }
}

/// One line's words.
pub(super) struct Line<'a> {
    pub toks: &'a [Tok<'a>],
    pub len: usize,
}

impl<'a> Line<'a> {
    pub fn word(&self, i: usize) -> Option<&'a str> {
        self.toks.get(i).map(|t| t.text)
    }
    /// The column of word `i`, or the end of the line when it is missing.
    pub fn col(&self, i: usize) -> usize {
        self.toks.get(i).map_or(self.len, |t| t.col0)
    }
    pub fn bad(&self, i: usize, expected: &str) -> Bad {
        let found = match self.word(i) {
            Some(w) => format!("found `{w}`"),
            None => "found the end of the line".to_string(),
        };
        Bad {
            col0: self.col(i),
            msg: format!("expected {expected}, {found}"),
        }
    }
    /// Nothing may follow word `i - 1`.
    pub fn end(&self, i: usize) -> Result<(), Bad> {
        match self.word(i) {
            None => Ok(()),
            Some(w) => Err(Bad {
                col0: self.col(i),
                msg: format!("unexpected `{w}` at the end of the line"),
            }),
        }
    }
    pub fn number(&self, i: usize, what: &str) -> Result<u32, Bad> {
        self.word(i)
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| self.bad(i, what))
    }
    pub fn address(&self, i: usize) -> Result<Ipv4Addr, Bad> {
        self.word(i)
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| self.bad(i, "an IPv4 address like 10.0.0.1"))
    }
    pub fn prefix(&self, i: usize) -> Result<Ipv4Net, Bad> {
        self.word(i)
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| self.bad(i, "an IPv4 prefix like 10.0.0.0/24"))
    }
    /// An OSPF area: a number or dotted quad (`0`, `0.0.0.0`).
    pub fn area(&self, i: usize) -> Result<u32, Bad> {
        let w = self.word(i).unwrap_or("");
        w.parse::<u32>()
            .ok()
            .or_else(|| w.parse::<Ipv4Addr>().ok().map(u32::from))
            .ok_or_else(|| self.bad(i, "an OSPF area like 0 or 0.0.0.0"))
    }
    /// The words from `i` on, as written.
    pub fn rest(&self, i: usize) -> String {
        self.toks
            .get(i..)
            .unwrap_or_default()
            .iter()
            .map(|t| t.text)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub(super) struct Ctx<'n> {
    pub net: &'n mut Network,
    pub dev: DeviceId,
    origin: &'n TextOrigin,
    idx: usize,
    mode: Mode,
    warnings: Vec<Diagnostic>,
    errors: Vec<Diagnostic>,
    /// `router bgp`, built once the whole file is read (peer-groups apply to their members).
    bgp: Option<bgp::Builder>,
    policies: RoutePolicies,
    /// `ip ospf area A` per interface: becomes a `network ADDR/32 area A` once the addresses
    /// are known.
    ospf_areas: Vec<(IfId, u32, Span)>,
    /// `frr defaults datacenter`.
    datacenter: bool,
}

impl Ctx<'_> {
    pub fn span(&self, col0: usize) -> Span {
        self.origin.span_at(self.idx, col0)
    }

    /// Valid FRR that fabsim does not model: a warning saying what is lost.
    pub fn not_modelled(&mut self, l: &Line, why: &str) {
        let d = Diagnostic::warning(
            self.span(l.col(0)),
            format!("`{}` is not modelled by fabsim: {why}; ignored", l.rest(0)),
        );
        self.warnings.push(d);
    }

    fn line(&mut self, raw: &str) {
        let toks = tokenize(raw);
        let Some(first) = toks.first() else { return };
        if first.text.starts_with('!') || first.text.starts_with('#') {
            return; // comments (vtysh writes `!` between blocks)
        }
        let l = Line {
            toks: &toks,
            len: raw.len(),
        };
        if self.mode == Mode::Skipped && (first.col0 > 0 || first.text == "exit") {
            if first.text == "exit" {
                self.mode = Mode::Global;
            }
            return;
        }
        if let Err(bad) = self.in_mode(&l) {
            let d = Diagnostic::error(self.span(bad.col0), bad.msg);
            self.errors.push(d);
        }
    }

    /// Reads the line in the current mode, falling back to the enclosing modes.
    fn in_mode(&mut self, l: &Line) -> Result<(), Bad> {
        let first = l.word(0).unwrap_or_default();
        match (first, self.mode.clone()) {
            ("end", _) => {
                self.mode = Mode::Global;
                return l.end(1);
            }
            ("exit", m) => {
                self.mode = m.parent();
                return l.end(1);
            }
            ("exit-address-family", Mode::BgpAf | Mode::BgpAfOther) => {
                self.mode = Mode::Bgp;
                return l.end(1);
            }
            _ => {}
        }
        loop {
            let handled = match self.mode.clone() {
                Mode::Global | Mode::Skipped => return self.global(l),
                Mode::Interface(i) => self.interface(i, l),
                Mode::Ospf => ospf::line(self, l),
                Mode::Bgp => bgp::router_line(self, l),
                Mode::BgpAf => bgp::af_line(self, l),
                Mode::BgpAfOther => Some(Ok(())), // skipped; warned at `address-family`
                Mode::RouteMap(name, seq) => policy::route_map_line(self, &name, seq, l),
            };
            match handled {
                Some(r) => return r,
                None => self.mode = self.mode.parent(),
            }
        }
    }

    fn global(&mut self, l: &Line) -> Result<(), Bad> {
        self.mode = Mode::Global;
        let w = |i| l.word(i).unwrap_or_default();
        // `frr version` is ignored by design; `frr defaults` is read below.
        if ignored::by_design(ignored::Context::Global, w(0)) && (w(0), w(1)) != ("frr", "defaults") {
            if w(0) == "line" {
                self.mode = Mode::Skipped;
            }
            return Ok(());
        }
        match (w(0), w(1)) {
            ("frr", "defaults") => {
                match w(2) {
                    "datacenter" => self.datacenter = true,
                    "traditional" => self.datacenter = false,
                    _ => return Err(l.bad(2, "`traditional` or `datacenter`")),
                }
                l.end(3)
            }
            ("hostname", _) => {
                let name = l.word(1).ok_or_else(|| l.bad(1, "a host name"))?;
                self.net.devices[self.dev.idx()].hostname = Some(name.to_string());
                l.end(2)
            }
            ("ip", "forwarding") => {
                self.net.devices[self.dev.idx()].ip_forward = true;
                l.end(2)
            }
            ("no", "ip") if w(2) == "forwarding" => {
                self.net.devices[self.dev.idx()].ip_forward = false;
                l.end(3)
            }
            ("ip", "route") => self.static_route(l),
            ("ip", "prefix-list") => policy::prefix_list(self, l),
            ("route-map", _) => {
                let (name, seq) = policy::route_map_entry(self, l)?;
                self.mode = Mode::RouteMap(name, seq);
                Ok(())
            }
            ("interface", _) => {
                let name = l.word(1).ok_or_else(|| l.bad(1, "an interface name like eth1"))?;
                if l.word(2) == Some("vrf") {
                    self.not_modelled(l, "VRFs are not modelled");
                    self.mode = Mode::Skipped;
                    return Ok(());
                }
                l.end(2)?;
                let id = self.interface_named(name, l.col(1));
                self.mode = Mode::Interface(id);
                Ok(())
            }
            ("router", "ospf") => {
                if l.word(2).is_some() {
                    self.not_modelled(l, "only the default OSPF instance is modelled");
                    self.mode = Mode::Skipped;
                    return Ok(());
                }
                ospf::start(self, l);
                self.mode = Mode::Ospf;
                Ok(())
            }
            ("router", "bgp") => {
                if bgp::start(self, l)? {
                    self.mode = Mode::Bgp;
                } else {
                    self.mode = Mode::Skipped;
                }
                Ok(())
            }
            (first, _) if ignored::UNMODELLED_BLOCKS.contains(&first) || (first == "router") => {
                self.not_modelled(l, "this daemon or block is not modelled; its lines are skipped");
                self.mode = Mode::Skipped;
                Ok(())
            }
            (first, _) if ignored::UNMODELLED_GLOBAL.contains(&first) => {
                self.not_modelled(l, "no routing effect fabsim models");
                Ok(())
            }
            _ => Err(Bad {
                col0: l.col(0),
                msg: format!("% Unknown command: {} (not an FRR 8.4 configuration line)", l.rest(0)),
            }),
        }
    }

    /// `ip route P GW|IF|blackhole|Null0 [DISTANCE]`: a zebra static route.
    fn static_route(&mut self, l: &Line) -> Result<(), Bad> {
        let prefix = l.prefix(2)?;
        let target = l
            .word(3)
            .ok_or_else(|| l.bad(3, "a gateway address, an interface or blackhole"))?;
        let (via, dev, blackhole) = match target.parse::<Ipv4Addr>() {
            Ok(gw) => (Some(gw), None, false),
            Err(_) if target == "blackhole" || target == "Null0" => (None, None, true),
            Err(_) => (None, Some(target.to_string()), false),
        };
        let distance = match l.word(4) {
            Some(_) => Some(u8::try_from(l.number(4, "a distance 1-255")?).map_err(|_| l.bad(4, "a distance 1-255"))?),
            None => None,
        };
        l.end(if distance.is_some() { 5 } else { 4 })?;
        let span = self.span(l.col(0));
        let d = &mut self.net.devices[self.dev.idx()];
        d.statics.push(StaticRoute {
            prefix: prefix.trunc(),
            via,
            dev,
            distance,
            metric: ZEBRA_ROUTE_METRIC,
            blackhole,
            onlink: false,
            origin: RouteOrigin::Zebra,
            span,
        });
        Ok(())
    }

    /// The host's interface `name`, created if it does not exist yet.
    fn interface_named(&mut self, name: &str, col0: usize) -> IfId {
        match find_iface(self.net, self.dev, name) {
            Some(id) => id,
            None => {
                let span = self.span(col0);
                add_linux_iface(self.net, self.dev, name, span)
            }
        }
    }

    fn interface(&mut self, id: IfId, l: &Line) -> Handled {
        let w = |i| l.word(i).unwrap_or_default();
        if ignored::by_design(ignored::Context::Interface, w(0)) {
            return Some(Ok(()));
        }
        let r = match (w(0), w(1), w(2)) {
            ("ip", "address", _) => self.iface_address(id, l),
            ("shutdown", _, _) => {
                self.net.interfaces[id.idx()].admin_up = false;
                l.end(1)
            }
            ("no", "shutdown", _) => {
                self.net.interfaces[id.idx()].admin_up = true;
                l.end(2)
            }
            ("ip", "ospf", "cost") => l.number(3, "an OSPF cost 1-65535").and_then(|c| {
                self.net.interfaces[id.idx()].ospf.cost = Some(c);
                l.end(4)
            }),
            ("ip", "ospf", "priority") => l.number(3, "an OSPF priority 0-255").and_then(|p| {
                let p = u8::try_from(p).map_err(|_| l.bad(3, "an OSPF priority 0-255"))?;
                self.net.interfaces[id.idx()].ospf.priority = Some(p);
                l.end(4)
            }),
            ("ip", "ospf", "passive") => {
                self.net.interfaces[id.idx()].ospf.passive = true;
                l.end(3)
            }
            ("ip", "ospf", "network") if w(3) == "point-to-point" => {
                self.net.interfaces[id.idx()].ospf.point_to_point = true;
                l.end(4)
            }
            ("ip", "ospf", "area") => l.area(3).and_then(|a| {
                let span = self.span(l.col(0));
                self.ospf_areas.push((id, a, span));
                l.end(4)
            }),
            (first, _, _) if ignored::UNMODELLED_INTERFACE.contains(&first) || (first, w(1)) == ("ip", "ospf") => {
                self.not_modelled(l, "no interface setting fabsim models");
                Ok(())
            }
            _ => return None,
        };
        Some(r)
    }

    fn iface_address(&mut self, id: IfId, l: &Line) -> Result<(), Bad> {
        let net = l
            .word(2)
            .and_then(|w| w.parse::<Ipv4Net>().ok())
            .ok_or_else(|| l.bad(2, "an interface address like 10.0.0.1/31"))?;
        l.end(3)?;
        let span = self.span(l.col(2));
        let iface = &mut self.net.interfaces[id.idx()];
        if iface.name == "lo" || iface.addr != AddrConfig::None {
            self.not_modelled(l, "fabsim models one address per interface (lo keeps 127.0.0.1/8)");
            return Ok(());
        }
        iface.addr = AddrConfig::Static(net);
        iface.span = span;
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<Diagnostic>, InputError> {
        ospf::finish(&mut self);
        if let Some(b) = self.bgp.take() {
            let policies = std::mem::take(&mut self.policies);
            let datacenter = self.datacenter;
            let cfg = b.build(&mut self, policies, datacenter);
            self.net.devices[self.dev.idx()].bgp = Some(cfg);
        }
        if !self.errors.is_empty() {
            let mut all = self.errors;
            all.sort_by(|a, b| a.span.cmp(&b.span));
            return Err(InputError(all));
        }
        self.warnings.sort_by(|a, b| a.span.cmp(&b.span));
        Ok(self.warnings)
    }
}
