//! BIRD 1.6 as Calico runs it (`birdcl`/`birdc` inside calico-node): `show status`,
//! `show protocols [all] [NAME|"PATTERN"]` and `show route [all] [for ADDR|PREFIX] [PREFIX]
//! [protocol NAME] [primary] [count|stats] [table master]`. Layouts from BIRD's source at tag
//! v1.6.8 (`nest/cmds.c` `cmd_show_status`, `nest/proto.c` `proto_cmd_show`,
//! `proto/bgp/bgp.c` `bgp_get_status`/`bgp_show_proto_info`, `nest/rt-table.c`
//! `rt_show_rte`/`rt_show_net`/`rt_show`, `proto/bgp/attrs.c` `bgp_get_route_info`,
//! `nest/rt-attr.c` `rta_show`, `client/commands.c` `cmd_expand`) and bgp-profiles.md §8.4/§8.5.
//! Views format only: every count, state and time comes from `DevState.bgp` (`BgpView`).

use std::borrow::Cow;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::linux::{fib, if_name};
use super::{bgp_state_name, origin_char, CommandError};
use crate::engine::state::{NextHop, Proto};
use crate::engine::State;
use crate::engine::{BgpOrigin, BgpSessionView, BgpState, BgpView, NhMetric, TableDest, TableRoute};
use crate::model::bgp::Policy;
use crate::model::{BirdDaemon, DeviceId, Network};

/// The version string of Calico's BIRD fork (`sysdep/config.h` of projectcalico/bird
/// `feature-ipinip`), as calico-node v3.25 prints it: seed-lab.md s1 (seed L986,
/// `BIRD v0.3.3+birdv1.6.8 ready.`).
pub(crate) const BIRD_VERSION: &str = "BIRD v0.3.3+birdv1.6.8";

/// BIRD's `tf_route`/`tf_proto` limit (`conf/conf.c`: `{"%T", "%F", 20*3600}`).
const SHORT_TIME_LIMIT_S: u64 = 20 * 3600;

/// Calico's `birdcl` talks to this socket (calico-node runs `bird -s /var/run/calico/bird.ctl`).
const SOCKET: &str = "/var/run/calico/bird.ctl";

/// `%F` and `%T` of a virtual time (ms) on the fixed epoch.
fn date_time(t_ms: u64) -> (String, String) {
    let t = super::clock::wall_clock(t_ms);
    (t.format("%Y-%m-%d").to_string(), t.format("%H:%M:%S").to_string())
}

/// `tf_base` (`%F %T`): status times.
fn full_time(t_ms: u64) -> String {
    let (d, t) = date_time(t_ms);
    format!("{d} {t}")
}

/// `tf_route`/`tf_proto` ("iso short"): `%T` when under 20 h old, else `%F`.
fn short_time(now_ms: u64, t_ms: u64) -> String {
    let (d, t) = date_time(t_ms);
    match now_ms.saturating_sub(t_ms) / 1000 < SHORT_TIME_LIMIT_S {
        true => t,
        false => d,
    }
}

/// BIRD's `ready.` greeting, printed by birdcl before any answer.
fn greeting() -> String {
    format!("{BIRD_VERSION} ready.\n")
}

fn syntax_error(word: &str) -> CommandError {
    CommandError::new(format!("syntax error, unexpected {word}"))
}

fn not_modelled(cmd: &str) -> CommandError {
    CommandError::new(format!("fabsim: `birdcl {cmd}` is not modelled"))
}

/// The client's command tree (`client/commands.c` from the `CF_CLI` entries): a word is
/// expanded when it is the unique prefix of a node (an exact match wins).
const TOP: &[&str] = &[
    "add",
    "configure",
    "debug",
    "delete",
    "disable",
    "down",
    "dump",
    "echo",
    "enable",
    "eval",
    "exit",
    "flush",
    "help",
    "mrtdump",
    "quit",
    "reload",
    "restart",
    "restrict",
    "show",
];
const SHOW: &[&str] = &[
    "interfaces",
    "memory",
    "ospf",
    "protocols",
    "roa",
    "route",
    "static",
    "status",
    "symbols",
];

fn expand(word: &str, nodes: &[&'static str]) -> Result<&'static str, CommandError> {
    if let Some(exact) = nodes.iter().find(|n| **n == word) {
        return Ok(exact);
    }
    let hits: Vec<&str> = nodes.iter().copied().filter(|n| n.starts_with(word)).collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(CommandError::new("No such command. Press `?' for help.")),
        many => Err(CommandError::new(format!(
            "Ambiguous command, possible expansions are:\n{}",
            many.join(" ")
        ))),
    }
}

/// Split the command birdcl sends (its arguments joined by blanks) into words, keeping
/// `"quoted patterns"` whole, quotes included.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `birdcl ARGS…` / `birdc ARGS…` on a Linux host. `tool` is the program name as typed.
pub(crate) fn birdcl(
    net: &Network,
    st: &State,
    dev: DeviceId,
    tool: &str,
    args: &[String],
) -> Result<String, CommandError> {
    let Some(daemon) = net.devices.get(dev.idx()).and_then(|d| d.bird.as_ref()) else {
        return Err(CommandError::new(format!("{tool}: command not found")));
    };
    let Some(view) = st.devices.get(dev.idx()).and_then(|d| d.bgp.as_ref()) else {
        return Err(CommandError::new(format!(
            "Unable to connect to server control socket ({SOCKET}): No such file or directory"
        )));
    };
    let line = args.join(" ");
    let w = words(&line);
    let Some((first, rest)) = w.split_first() else {
        return Err(CommandError::new(format!(
            "fabsim: interactive {tool} is not modelled; give the command as arguments ({tool} show route)"
        )));
    };
    let b = Bird::new(net, st, dev, daemon, view);
    match expand(first, TOP)? {
        "show" => {
            let (sub, rest) = rest
                .split_first()
                .ok_or_else(|| CommandError::new("No such command. Press `?' for help."))?;
            let body = match expand(sub, SHOW)? {
                "status" if rest.is_empty() => b.show_status(),
                "status" => return Err(syntax_error(&rest[0])),
                "protocols" => b.show_protocols(rest)?,
                "route" => b.show_route(rest)?,
                other => return Err(not_modelled(&format!("show {other}"))),
            };
            Ok(greeting() + &body)
        }
        other => Err(not_modelled(other)),
    }
}

/// `calicoctl node status` (calico-reference.md §6.1, calicoctl `node/status.go`): calicoctl
/// runs `birdcl show protocols` and keeps the `Mesh_`, `Global_` and `Node_` sessions, in
/// BIRD's order; the peer address is the protocol name with `_` turned into `.`.
pub(crate) fn calico_node_status(net: &Network, st: &State, dev: DeviceId) -> Result<String, CommandError> {
    let daemon = net.devices.get(dev.idx()).and_then(|d| d.bird.as_ref());
    let view = st.devices.get(dev.idx()).and_then(|d| d.bgp.as_ref());
    let (Some(daemon), Some(view)) = (daemon, view) else {
        return Ok("Calico process is not running.\n".into());
    };
    let b = Bird::new(net, st, dev, daemon, view);
    let mut rows: Vec<[String; 5]> = Vec::new();
    for p in &b.protos {
        let kind = [
            ("Mesh_", "node-to-node mesh"),
            ("Global_", "global"),
            ("Node_", "node specific"),
        ]
        .into_iter()
        .find(|(prefix, _)| p.name.starts_with(prefix));
        let Some((prefix, peer_type)) = kind else { continue };
        // calicoctl splits BIRD's line on whitespace: name, proto, table, state, since, info….
        let line = b.protocol_line(p);
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (state, since) = (cols.get(3).copied().unwrap_or(""), cols.get(4).copied().unwrap_or(""));
        let info = cols.get(5..).map(|c| c.join(" ")).unwrap_or_default();
        let addr = p.name[prefix.len()..].replace('_', ".");
        rows.push([addr, peer_type.to_string(), state.to_string(), since.to_string(), info]);
    }
    let mut out = String::from("Calico process is running.\n\nIPv4 BGP status\n");
    if rows.is_empty() {
        out.push_str("No IPv4 peers found.\n");
    } else {
        out.push_str(&super::tables::tablewriter(
            &["PEER ADDRESS", "PEER TYPE", "STATE", "SINCE", "INFO"],
            &rows,
        ));
    }
    // bird6 is not modelled: no IPv6 sessions exist.
    out.push_str("\nIPv6 BGP status\nNo IPv6 peers found.\n\n");
    Ok(out)
}

/// Which kind of protocol a table route or a protocol row belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Bgp,
    Kernel,
    Device,
    Direct,
    Static,
}

impl Kind {
    /// `proto` column (`protocol->name`).
    fn proto(self) -> &'static str {
        match self {
            Kind::Bgp => "BGP",
            Kind::Kernel => "Kernel",
            Kind::Device => "Device",
            Kind::Direct => "Direct",
            Kind::Static => "Static",
        }
    }
    /// `rta_show`'s source name (`src_names[a->source]`): BGP, static, inherit (kernel),
    /// device (direct).
    fn source(self) -> &'static str {
        match self {
            Kind::Bgp => "BGP",
            Kind::Kernel => "inherit",
            Kind::Device | Kind::Direct => "device",
            Kind::Static => "static",
        }
    }
    fn preference(self) -> u32 {
        match self {
            Kind::Bgp => 100,
            Kind::Kernel => 10,
            Kind::Device | Kind::Direct => 240,
            Kind::Static => 200,
        }
    }
}

/// One row of `show protocols`: a BGP session or one of the daemon's other protocols.
struct ProtoRow<'a> {
    name: String,
    kind: Kind,
    session: Option<&'a BgpSessionView>,
}

struct Bird<'a> {
    net: &'a Network,
    st: &'a State,
    dev: DeviceId,
    daemon: &'a BirdDaemon,
    view: &'a BgpView,
    /// The view's table, read once (`BgpTable::routes` builds it), without the routes import
    /// filters rejected (`TableRoute::accepted`).
    table: Cow<'a, [TableRoute]>,
    /// The protocols `show protocols` lists, in order.
    protos: Vec<ProtoRow<'a>>,
}

fn filter_name(p: &Policy) -> &str {
    match p {
        Policy::All => "ACCEPT",
        Policy::None => "REJECT",
        Policy::Filter(f) | Policy::RouteMap(f) => f,
    }
}

/// BIRD's `patmatch`: `*` any run, `?` one character.
fn pattern_match(pat: &[u8], s: &[u8]) -> bool {
    match (pat.split_first(), s.split_first()) {
        (None, _) => s.is_empty(),
        (Some((b'*', p)), _) => (0..=s.len()).any(|k| pattern_match(p, &s[k..])),
        (Some((b'?', p)), Some((_, t))) => pattern_match(p, t),
        (Some((c, p)), Some((d, t))) => c == d && pattern_match(p, t),
        (Some(_), None) => false,
    }
}

/// BIRD drops a route its import filter rejects (`rte_update2` without `in_keep_filtered`):
/// not in `show route`, not in its counts.
fn accepted_only(table: Cow<'_, [TableRoute]>) -> Cow<'_, [TableRoute]> {
    if table.iter().all(|r| r.accepted) {
        return table;
    }
    Cow::Owned(table.iter().filter(|r| r.accepted).cloned().collect())
}

impl<'a> Bird<'a> {
    /// BIRD on `dev`, with its protocols listed once in configuration order.
    fn new(net: &'a Network, st: &'a State, dev: DeviceId, daemon: &'a BirdDaemon, view: &'a BgpView) -> Self {
        let mut b = Bird {
            net,
            st,
            dev,
            daemon,
            view,
            table: accepted_only(view.table.routes()),
            protos: Vec::new(),
        };
        b.protos = b.protocols();
        b
    }

    /// BIRD's start: fabsim has no separate daemon start time, so the host's boot is used.
    fn boot_ms(&self) -> u64 {
        self.net.devices.get(self.dev.idx()).map_or(0, |d| d.boot_ms)
    }

    fn router_id(&self) -> Ipv4Addr {
        self.view
            .router_id
            .or(self.daemon.router_id)
            .unwrap_or(Ipv4Addr::UNSPECIFIED)
    }

    /// `cmd_show_status` (the `ready.` greeting is added by the caller).
    fn show_status(&self) -> String {
        let boot = full_time(self.boot_ms());
        format!(
            "{BIRD_VERSION}\nRouter ID is {}\nCurrent server time is {}\nLast reboot on {boot}\n\
             Last reconfiguration on {boot}\nDaemon is up and running\n",
            self.router_id(),
            full_time(self.st.time_ms),
        )
    }

    /// Protocols in configuration order as Calico's bird.cfg declares them: `static1`
    /// (bird_aggr.cfg is included first), `kernel1`, `device1`, `direct1`, then the BGP
    /// sessions in the engine's order (BIRD lists protocols in creation order, so a session
    /// added by a reconfiguration comes last: seed s3a, `Mesh_10_0_11_1` after the others).
    fn protocols(&self) -> Vec<ProtoRow<'a>> {
        let d = self.daemon;
        let mut rows = Vec::new();
        let mut add = |present: bool, name: &str, kind| {
            if present {
                rows.push(ProtoRow {
                    name: name.into(),
                    kind,
                    session: None,
                })
            }
        };
        add(!d.statics.is_empty(), "static1", Kind::Static);
        add(d.kernel.is_some(), "kernel1", Kind::Kernel);
        add(d.device, "device1", Kind::Device);
        add(d.direct.is_some(), "direct1", Kind::Direct);
        for (k, s) in self.view.sessions.iter().enumerate() {
            rows.push(ProtoRow {
                // An unnamed session gets BIRD's automatic name (`bgp1`, `bgp2`, …).
                name: s.name.clone().unwrap_or_else(|| format!("bgp{}", k + 1)),
                kind: Kind::Bgp,
                session: Some(s),
            });
        }
        rows
    }

    /// The kind of the protocol a table route came from, by name; unknown names with BGP
    /// attributes are BGP, other unknown names are treated as kernel-learned.
    fn kind_of(&self, r: &TableRoute) -> Kind {
        if let Some(p) = self.protos.iter().find(|p| p.name == r.protocol) {
            return p.kind;
        }
        match r.protocol.as_str() {
            _ if r.attrs.is_some() => Kind::Bgp,
            n if n.starts_with("static") => Kind::Static,
            n if n.starts_with("direct") => Kind::Direct,
            n if n.starts_with("device") => Kind::Device,
            _ => Kind::Kernel,
        }
    }

    fn bgp_config(&self, addr: Ipv4Addr) -> Option<&'a crate::model::BgpNeighbor> {
        self.net
            .devices
            .get(self.dev.idx())
            .and_then(|d| d.bgp.as_ref())
            .and_then(|c| c.neighbor(addr))
    }

    /// `show protocols [all] [NAME | "PATTERN"]` (`proto_cmd_show`).
    fn show_protocols(&self, args: &[String]) -> Result<String, CommandError> {
        let (all, rest) = match args.split_first() {
            Some((a, rest)) if "all".starts_with(a.as_str()) => (true, rest),
            _ => (false, args),
        };
        let rows = &self.protos;
        let selected: Vec<&ProtoRow> = match rest {
            [] => rows.iter().collect(),
            [p] if p.len() >= 2 && p.starts_with('"') && p.ends_with('"') => {
                let pat = &p[1..p.len() - 1];
                let hits: Vec<&ProtoRow> = rows
                    .iter()
                    .filter(|r| pattern_match(pat.as_bytes(), r.name.as_bytes()))
                    .collect();
                if hits.is_empty() {
                    return Ok("No protocols match\n".into());
                }
                hits
            }
            [name] => match rows.iter().find(|r| r.name == *name) {
                Some(r) => vec![r],
                None => return Err(CommandError::new(format!("{name} is not a protocol"))),
            },
            [_, extra, ..] => return Err(syntax_error(extra)),
        };
        let mut out = String::from("name     proto    table    state  since       info\n");
        for r in selected {
            out.push_str(&self.protocol_line(r));
            if all {
                out.push_str(&self.protocol_detail(r));
                out.push('\n');
            }
        }
        Ok(out)
    }

    fn admin_down(&self, s: &BgpSessionView) -> bool {
        self.bgp_config(s.neighbor).is_some_and(|n| n.shutdown)
    }

    /// `%-8s %-8s %-8s %-5s  %-10s  %s`. BGP: `up` + `Established` when established; a
    /// disabled (`shutdown`) neighbour is `down` with no state; otherwise `start` + the state
    /// (`Passive` for an idle passive session) padded to 14 + the last error, which the engine
    /// gives with its class (`Socket: …`, `Received: …`, `BGP Error: …`). Other protocols are
    /// `up` since the daemon started, with an empty info column.
    fn protocol_line(&self, r: &ProtoRow) -> String {
        let now = self.st.time_ms;
        let (state, since, info) = match r.session {
            Some(s) if self.admin_down(s) => ("down", s.since_ms, String::new()),
            Some(s) => {
                let err = s.last_error.as_deref().filter(|_| s.state != BgpState::Established);
                let state = match s.state {
                    BgpState::Established => "up",
                    _ => "start",
                };
                (
                    state,
                    s.since_ms,
                    format!("{:<14}{}", bgp_state_dsc(s), err.unwrap_or("")),
                )
            }
            None => ("up", self.boot_ms(), String::new()),
        };
        format!(
            "{:<8} {:<8} {:<8} {:<5}  {:<10}  {}\n",
            r.name,
            r.kind.proto(),
            "master",
            state,
            short_time(now, since),
            info
        )
    }

    /// The `all` block: `proto_show_basic_info` (description, preference, filters, route
    /// counts) and for BGP `bgp_show_proto_info`. Not shown, because the engine does not keep
    /// them: the `Route change stats` table, `Neighbor caps`, and the remaining time of the
    /// hold/keepalive timers (printed as the full interval, as just after a message).
    fn protocol_detail(&self, r: &ProtoRow) -> String {
        let mut out = String::new();
        let table = &self.table;
        let (imported, exported, preferred) = match r.session {
            Some(s) => (s.pfx_acc as usize, s.exported as usize, s.preferred as usize),
            None => {
                let mine = table.iter().filter(|t| t.protocol == r.name);
                let exported = match r.kind {
                    // What the kernel protocol exported is what BIRD installed in the kernel.
                    Kind::Kernel => {
                        fib(self.st, self.dev).map_or(0, |f| f.iter().filter(|x| x.proto == Proto::Bird).count())
                    }
                    _ => 0,
                };
                (mine.clone().count(), exported, mine.filter(|t| t.best).count())
            }
        };
        let (import, export): (String, String) = match (r.session, r.kind) {
            (Some(s), _) => self
                .bgp_config(s.neighbor)
                .map_or(("ACCEPT".into(), "REJECT".into()), |n| {
                    (filter_name(&n.import).into(), filter_name(&n.export).into())
                }),
            (None, Kind::Kernel) => self
                .daemon
                .kernel
                .as_ref()
                .map_or(("ACCEPT".into(), "REJECT".into()), |k| {
                    (filter_name(&k.import).into(), filter_name(&k.export).into())
                }),
            (None, _) => ("ACCEPT".into(), "REJECT".into()),
        };
        if let Some(d) = r
            .session
            .and_then(|s| self.bgp_config(s.neighbor))
            .and_then(|n| n.description.as_ref())
        {
            out.push_str(&format!("  Description:    {d}\n"));
        }
        out.push_str(&format!("  Preference:     {}\n", r.kind.preference()));
        out.push_str(&format!("  Input filter:   {import}\n"));
        out.push_str(&format!("  Output filter:  {export}\n"));
        let down = r.session.is_some_and(|s| self.admin_down(s));
        if !down {
            out.push_str(&format!(
                "  Routes:         {imported} imported, {exported} exported, {preferred} preferred\n"
            ));
        }
        let Some(s) = r.session else {
            return out;
        };
        out.push_str(&format!("  BGP state:          {}\n", bgp_state_dsc(s)));
        out.push_str(&format!("    Neighbor address: {}\n", s.neighbor));
        let remote_as = s.remote_as.map_or(String::from("0"), |a| a.to_string());
        out.push_str(&format!("    Neighbor AS:      {remote_as}\n"));
        if s.state == BgpState::Established && !down {
            let id = s.peer_router_id.unwrap_or(Ipv4Addr::UNSPECIFIED);
            out.push_str(&format!("    Neighbor ID:      {id}\n"));
            let flags = [
                (s.internal, "internal"),
                (!s.internal, "external"),
                (s.multihop, " multihop"),
                (true, " AS4"),
                (s.add_path_rx, " add-path-rx"),
                (s.add_path_tx, " add-path-tx"),
            ];
            let session: String = flags.iter().filter(|(on, _)| *on).map(|(_, t)| *t).collect();
            out.push_str(&format!("    Session:          {session}\n"));
            let src = s.source.unwrap_or(Ipv4Addr::UNSPECIFIED);
            out.push_str(&format!("    Source address:   {src}\n"));
            out.push_str(&format!("    Hold timer:       {0}/{0}\n", s.hold_s));
            out.push_str(&format!("    Keepalive timer:  {0}/{0}\n", s.keepalive_s));
        }
        if let Some(e) = s.last_error.as_deref().filter(|_| s.state != BgpState::Established) {
            out.push_str(&format!("    Last error:       {e}\n"));
        }
        out
    }

    /// `show route …` (`rt_show`): parse the options, then each network in table order.
    fn show_route(&self, args: &[String]) -> Result<String, CommandError> {
        let mut o = RouteOpts::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "all" => o.verbose = true,
                "primary" => o.primary = true,
                "count" => o.stats = 2,
                "stats" => o.stats = 1,
                "for" => {
                    let x = it.next().ok_or_else(|| syntax_error("END"))?;
                    let p = x
                        .parse::<Ipv4Net>()
                        .ok()
                        .or_else(|| x.parse::<Ipv4Addr>().ok().map(Ipv4Net::from))
                        .ok_or_else(|| syntax_error(x))?;
                    o.set_target(p.trunc(), true)?;
                }
                "protocol" => {
                    let name = it.next().ok_or_else(|| syntax_error("END"))?;
                    if !self.protos.iter().any(|p| p.name == *name) {
                        return Err(CommandError::new(format!("{name} is not a protocol")));
                    }
                    o.protocol = Some(name.clone());
                }
                "table" => match it.next().map(String::as_str) {
                    Some("master") => {}
                    Some(t) => return Err(CommandError::new(format!("{t} is not a table"))),
                    None => return Err(syntax_error("END")),
                },
                "filter" | "where" | "filtered" | "export" | "preexport" | "noexport" => {
                    return Err(not_modelled(&format!("show route {a}")))
                }
                x => match x.parse::<Ipv4Net>() {
                    Ok(p) if p.trunc() == p => o.set_target(p, false)?,
                    Ok(_) => return Err(CommandError::new("Invalid prefix")),
                    Err(_) => return Err(syntax_error(x)),
                },
            }
        }
        let mut nets: Vec<Ipv4Net> = Vec::new();
        for r in self.table.iter() {
            if !nets.contains(&r.prefix) {
                nets.push(r.prefix);
            }
        }
        let mut c = Counters::default();
        let mut out = String::new();
        let Some((target, longest)) = o.target else {
            for n in &nets {
                out.push_str(&self.show_net(*n, &o, &mut c));
            }
            if o.stats > 0 {
                out.push_str(&format!("{} of {} routes for {} networks\n", c.shown, c.routes, c.nets));
            }
            return Ok(out);
        };
        // `for`: `net_route`, the longest prefix holding routes; else the exact network.
        let chosen = match longest {
            true => nets
                .iter()
                .filter(|n| n.prefix_len() <= target.prefix_len() && n.contains(&target.network()))
                .max_by_key(|n| n.prefix_len())
                .copied(),
            false => nets.iter().find(|n| **n == target).copied(),
        };
        if let Some(n) = chosen {
            out.push_str(&self.show_net(n, &o, &mut c));
        }
        if c.routes == 0 {
            out.push_str("Network not in table\n");
        }
        Ok(out)
    }

    /// `rt_show_net`: the network's routes (best first), the prefix printed on the first
    /// shown one only.
    fn show_net(&self, n: Ipv4Net, o: &RouteOpts, c: &mut Counters) -> String {
        let mut routes: Vec<&TableRoute> = self.table.iter().filter(|r| r.prefix == n).collect();
        routes.sort_by_key(|r| !r.best);
        let mut out = String::new();
        let mut ia = n.to_string();
        for (k, r) in routes.iter().enumerate() {
            c.routes += 1;
            if k == 0 {
                c.nets += 1;
            }
            if o.protocol.as_ref().is_none_or(|p| *p == r.protocol) {
                c.shown += 1;
                if o.stats < 2 {
                    out.push_str(&self.route_text(&ia, r, o.verbose));
                }
                ia.clear();
            }
            if o.primary {
                break;
            }
        }
        out
    }

    /// `rt_show_rte`: `%-18s %s [%s %s%s]%s%s`, multipath next hops, and with `all` the
    /// `rta_show` block.
    fn route_text(&self, ia: &str, r: &TableRoute, verbose: bool) -> String {
        let kind = self.kind_of(r);
        let ifname = |nh: &NextHop| if_name(self.net, nh.iface).to_string();
        let (via, gw, extra) = match &r.dest {
            TableDest::Via(nh) => match nh.via {
                Some(g) => (format!("via {g} on {}", ifname(nh)), Some(g), Vec::new()),
                None => (format!("dev {}", ifname(nh)), None, Vec::new()),
            },
            TableDest::Device(nh) => (format!("dev {}", ifname(nh)), None, Vec::new()),
            TableDest::Blackhole => ("blackhole".into(), None, Vec::new()),
            TableDest::Unreachable => ("unreachable".into(), None, Vec::new()),
            TableDest::Multipath(hops) => ("multipath".into(), None, hops.to_vec()),
        };
        // `a->from` is shown when it differs from the resolved gateway (`rt_show_rte`).
        let from = match r.from {
            Some(f) if Some(f) != gw && !f.is_unspecified() => format!(" from {f}"),
            _ => String::new(),
        };
        let star = if r.best { " *" } else { "" };
        let info = match (kind, r.attrs.as_deref()) {
            (Kind::Bgp, attrs) => {
                let metric = match r.nh_metric {
                    None => String::new(),
                    Some(NhMetric::Known(m)) => format!("/{m}"),
                    Some(NhMetric::Unknown) => "/?".into(),
                    Some(NhMetric::Unresolvable) => "/-".into(),
                };
                let origin_as = attrs
                    .and_then(|a| a.as_path.last())
                    .map_or(String::new(), |a| format!("AS{a}"));
                let origin = attrs.map_or(String::new(), |a| origin_char(a.origin).to_string());
                format!(" ({}{metric}) [{origin_as}{origin}]", r.preference)
            }
            _ => format!(" ({})", r.preference),
        };
        let mut out = format!(
            "{ia:<18} {via} [{} {}{from}]{star}{info}\n",
            r.protocol,
            short_time(self.st.time_ms, r.since_ms)
        );
        for nh in &extra {
            let g = nh.via.unwrap_or(Ipv4Addr::UNSPECIFIED);
            out.push_str(&format!("\tvia {g} on {} weight 1\n", ifname(nh)));
        }
        if verbose {
            out.push_str(&format!("\tType: {} unicast univ\n", kind.source()));
            if let (Kind::Bgp, Some(a)) = (kind, r.attrs.as_deref()) {
                let origin = match a.origin {
                    BgpOrigin::Igp => "IGP",
                    BgpOrigin::Egp => "EGP",
                    BgpOrigin::Incomplete => "Incomplete",
                };
                out.push_str(&format!("\tBGP.origin: {origin}\n"));
                let path: Vec<String> = a.as_path.iter().map(u32::to_string).collect();
                out.push_str(&format!("\tBGP.as_path: {}\n", path.join(" ")));
                if let Some(nh) = r.next_hop {
                    out.push_str(&format!("\tBGP.next_hop: {nh}\n"));
                }
                if let Some(m) = a.med {
                    out.push_str(&format!("\tBGP.med: {m}\n"));
                }
                if let Some(lp) = a.local_pref {
                    out.push_str(&format!("\tBGP.local_pref: {lp}\n"));
                }
            }
        }
        out
    }
}

#[derive(Default)]
struct RouteOpts {
    verbose: bool,
    primary: bool,
    /// 1 = `stats` (routes and a count line), 2 = `count` (the count line only).
    stats: u8,
    /// The network asked for, and whether by `for` (longest match).
    target: Option<(Ipv4Net, bool)>,
    protocol: Option<String>,
}

impl RouteOpts {
    fn set_target(&mut self, p: Ipv4Net, longest: bool) -> Result<(), CommandError> {
        if self.target.is_some() {
            return Err(CommandError::new("Only one prefix expected"));
        }
        self.target = Some((p, longest));
        Ok(())
    }
}

#[derive(Default)]
struct Counters {
    routes: usize,
    nets: usize,
    shown: usize,
}

/// `bgp_state_dsc`: the FSM state name, `Passive` for an idle passive session.
fn bgp_state_dsc(s: &BgpSessionView) -> &'static str {
    match s.state {
        BgpState::Idle if s.passive => "Passive",
        st => bgp_state_name(st),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::IfState;
    use crate::engine::EcmpRole;
    use crate::model::bgp::{BirdKernel, BirdStatic, BirdStaticDest};
    use crate::model::{DeviceKind, IfId};
    use crate::views::testnet::*;

    /// Seconds of virtual time for a wall-clock time on the epoch's day `day` (0 = 2025-08-01).
    fn at(day: u64, h: u64, m: u64, s: u64) -> u64 {
        ((day * 24 + h) * 3600 + m * 60 + s) * 1000
    }

    fn mesh(nbr: &str, asn: u32, since_ms: u64) -> BgpSessionView {
        let mut s = bgp_session(nbr, asn, asn, BgpState::Established);
        s.name = Some(format!("Mesh_{}", nbr.replace('.', "_")));
        s.since_ms = since_ms;
        s.multihop = true;
        s.add_path_rx = true;
        s.add_path_tx = true;
        s.peer_router_id = Some(ip(nbr));
        (s.hold_s, s.keepalive_s) = (240, 80);
        s
    }

    /// A BGP route as BIRD holds it: next hop `nh` resolved to `gw` on `iface`.
    fn bgp(prefix: &str, proto: &str, nh: &str, gw: &str, iface: IfId, as_path: &[u32], since_ms: u64) -> TableRoute {
        TableRoute {
            since_ms,
            ..bgp_path(prefix, proto, nh, gw, iface, as_path)
        }
    }

    fn other(prefix: &str, proto: &str, dest: TableDest, preference: u32, since_ms: u64) -> TableRoute {
        TableRoute {
            prefix: net(prefix),
            protocol: proto.into(),
            from: None,
            path_id: 0,
            attrs: None,
            next_hop: None,
            dest,
            nh_metric: None,
            preference,
            ebgp: false,
            valid: true,
            accepted: true,
            best: true,
            ecmp: EcmpRole::None,
            since_ms,
            decided_by: None,
        }
    }

    /// A Calico node: ens3 on the fabric, ens5 in the NAT cloud, Calico's BIRD protocols.
    fn node(name: &str, ens3: &str, ens5: &str) -> (Lab, DeviceId, IfId, IfId) {
        let mut lab = Lab::default();
        let d = lab.device(name, DeviceKind::Linux);
        let e3 = lab.iface(d, "ens3", Some(ens3));
        let e5 = lab.iface(d, "ens5", Some(ens5));
        lab.net.devices[d.idx()].bird = Some(BirdDaemon {
            router_id: Some(net(ens5).addr()),
            kernel: Some(BirdKernel {
                learn: true,
                persist: true,
                scan_time: Some(2),
                import: Policy::All,
                export: Policy::Filter("calico_kernel_programming".into()),
                graceful_restart: true,
                merge_paths: Some(0),
            }),
            device: true,
            direct: Some(Vec::new()),
            statics: vec![BirdStatic {
                prefix: net("10.66.52.0/24"),
                dest: BirdStaticDest::Blackhole,
                span: Default::default(),
            }],
            ..Default::default()
        });
        lab.st.devices[d.idx()].bgp = Some(BgpView {
            asn: 64512,
            router_id: Some(net(ens5).addr()),
            ..Default::default()
        });
        (lab, d, e3, e5)
    }

    fn view(lab: &mut Lab, d: DeviceId) -> &mut BgpView {
        lab.st.devices[d.idx()].bgp.as_mut().unwrap()
    }

    /// k-w3 at s1 (seed-lab.md s1, L985-1022): three mesh sessions since 2025-08-01 10:58,
    /// asked on 2025-08-03 at 04:54:44.
    fn kw3_s1() -> (Lab, DeviceId) {
        let (mut lab, d, _e3, e5) = node("k-w3", "10.3.33.1/31", "10.0.137.142/24");
        lab.net.devices[d.idx()].boot_ms = at(0, 10, 58, 9);
        lab.st.time_ms = at(2, 4, 54, 44);
        let up = at(0, 10, 58, 12);
        let v = view(&mut lab, d);
        for n in ["10.0.137.12", "10.0.137.15", "10.0.137.112"] {
            v.sessions.push(mesh(n, 64512, up));
        }
        *v.table.routes_mut() = vec![
            bgp(
                "10.66.53.192/26",
                "Mesh_10_0_137_112",
                "10.0.137.112",
                "10.0.137.112",
                e5,
                &[],
                up,
            ),
            bgp(
                "10.66.73.128/26",
                "Mesh_10_0_137_12",
                "10.0.137.12",
                "10.0.137.12",
                e5,
                &[],
                up,
            ),
            bgp(
                "10.66.207.64/26",
                "Mesh_10_0_137_15",
                "10.0.137.15",
                "10.0.137.15",
                e5,
                &[],
                up,
            ),
        ];
        (lab, d)
    }

    #[test]
    fn show_status_c28_exact() {
        let (lab, d) = kw3_s1();
        let out = lab.run(d, "birdcl show status").unwrap();
        assert_eq!(
            out,
            "BIRD v0.3.3+birdv1.6.8 ready.\n\
             BIRD v0.3.3+birdv1.6.8\n\
             Router ID is 10.0.137.142\n\
             Current server time is 2025-08-03 04:54:44\n\
             Last reboot on 2025-08-01 10:58:09\n\
             Last reconfiguration on 2025-08-01 10:58:09\n\
             Daemon is up and running\n"
        );
        assert_eq!(
            lab.run(d, "birdc sh stat").unwrap_err().message.lines().next(),
            Some("Ambiguous command, possible expansions are:")
        );
        assert_eq!(lab.run(d, "birdc sh statu").unwrap(), out);
        assert_eq!(lab.run(d, "birdcl 'show status'").unwrap(), out);
    }

    #[test]
    fn show_route_c29() {
        let (lab, d) = kw3_s1();
        let out = lab.run(d, "birdcl show route").unwrap();
        assert_eq!(
            out,
            "BIRD v0.3.3+birdv1.6.8 ready.\n\
             10.66.53.192/26    via 10.0.137.112 on ens5 [Mesh_10_0_137_112 2025-08-01] * (100/0) [i]\n\
             10.66.73.128/26    via 10.0.137.12 on ens5 [Mesh_10_0_137_12 2025-08-01] * (100/0) [i]\n\
             10.66.207.64/26    via 10.0.137.15 on ens5 [Mesh_10_0_137_15 2025-08-01] * (100/0) [i]\n"
        );
        assert_lines(
            &out,
            "10.66.207.64/26 via 10.0.137.15 on ens5 [Mesh_10_0_137_15 2025-08-01] * (100/0) [i]",
        );
        let count = lab.run(d, "birdcl show route count").unwrap();
        assert_eq!(count, "BIRD v0.3.3+birdv1.6.8 ready.\n3 of 3 routes for 3 networks\n");
        let p = lab.run(d, "birdcl show route protocol Mesh_10_0_137_12").unwrap();
        assert_eq!(p.lines().count(), 2);
        assert_eq!(
            lab.err(d, "birdcl show route protocol Mesh_1"),
            "Mesh_1 is not a protocol"
        );
        // `for ADDR`: the longest match; an exact prefix must exist.
        let f = lab.run(d, "birdcl show route for 10.66.207.66").unwrap();
        assert!(f.ends_with("[Mesh_10_0_137_15 2025-08-01] * (100/0) [i]\n"), "{f}");
        assert_eq!(
            lab.run(d, "birdcl show route 10.66.207.0/24").unwrap(),
            "BIRD v0.3.3+birdv1.6.8 ready.\nNetwork not in table\n"
        );
        assert_eq!(lab.err(d, "birdcl show route 10.66.207.65/26"), "Invalid prefix");
        assert!(lab.err(d, "birdcl show route bogus").starts_with("syntax error"));
    }

    #[test]
    fn show_protocols_seed_s1_s2_exact() {
        let (mut lab, d) = kw3_s1();
        let out = lab.run(d, "birdcl show protocols").unwrap();
        assert_eq!(
            out,
            "BIRD v0.3.3+birdv1.6.8 ready.\n\
             name     proto    table    state  since       info\n\
             static1  Static   master   up     2025-08-01  \n\
             kernel1  Kernel   master   up     2025-08-01  \n\
             device1  Device   master   up     2025-08-01  \n\
             direct1  Direct   master   up     2025-08-01  \n\
             Mesh_10_0_137_12 BGP      master   up     2025-08-01  Established   \n\
             Mesh_10_0_137_15 BGP      master   up     2025-08-01  Established   \n\
             Mesh_10_0_137_112 BGP      master   up     2025-08-01  Established   \n"
        );
        // The seed's s1 command.
        let grep = lab.run(d, "birdcl show protocols | grep BGP").unwrap();
        assert_eq!(grep.lines().count(), 3);
        assert_lines(
            &grep,
            "Mesh_10_0_137_12 BGP master up 2025-08-01 Established\n\
             Mesh_10_0_137_15 BGP master up 2025-08-01 Established\n\
             Mesh_10_0_137_112 BGP master up 2025-08-01 Established",
        );
        // s2 (L1381-1383): sessions since the restart at 03:52:40, asked the same day.
        lab.st.time_ms = at(12, 4, 10, 0);
        for s in &mut view(&mut lab, d).sessions {
            s.since_ms = at(12, 3, 52, 40);
        }
        let grep = lab.run(d, "birdcl show protocols | grep BGP").unwrap();
        assert!(grep.starts_with("Mesh_10_0_137_12 BGP      master   up     03:52:40    Established   \n"));
        // A session that is not up: `start`, its state padded to 14, then the error.
        let v = view(&mut lab, d);
        v.sessions[1].state = BgpState::Active;
        v.sessions[1].last_error = Some("Socket: Connection refused".into());
        v.sessions[2].state = BgpState::Idle;
        v.sessions[2].passive = true;
        let out = lab.run(d, "birdcl 'show protocols \"Mesh*\"'").unwrap();
        assert_eq!(
            out.lines().skip(3).collect::<Vec<_>>(),
            [
                "Mesh_10_0_137_15 BGP      master   start  03:52:40    Active        Socket: Connection refused",
                "Mesh_10_0_137_112 BGP      master   start  03:52:40    Passive       ",
            ]
        );
        assert_eq!(lab.run(d, "birdcl show protocols kernel1").unwrap().lines().count(), 3);
        assert_eq!(lab.err(d, "birdcl show protocols bgp9"), "bgp9 is not a protocol");
        assert!(lab
            .run(d, "birdcl show protocols '\"x*\"'")
            .unwrap()
            .ends_with("No protocols match\n"));
    }

    #[test]
    fn show_protocols_all_detail() {
        let (mut lab, d) = kw3_s1();
        let v = view(&mut lab, d);
        (v.sessions[0].pfx_acc, v.sessions[0].exported, v.sessions[0].preferred) = (1, 2, 1);
        v.sessions[0].source = Some(ip("10.0.137.142"));
        let out = lab.run(d, "birdcl show protocols all Mesh_10_0_137_12").unwrap();
        assert_eq!(
            out,
            "BIRD v0.3.3+birdv1.6.8 ready.\n\
             name     proto    table    state  since       info\n\
             Mesh_10_0_137_12 BGP      master   up     2025-08-01  Established   \n  \
             Preference:     100\n  \
             Input filter:   ACCEPT\n  \
             Output filter:  REJECT\n  \
             Routes:         1 imported, 2 exported, 1 preferred\n  \
             BGP state:          Established\n    \
             Neighbor address: 10.0.137.12\n    \
             Neighbor AS:      64512\n    \
             Neighbor ID:      10.0.137.12\n    \
             Session:          internal multihop AS4 add-path-rx add-path-tx\n    \
             Source address:   10.0.137.142\n    \
             Hold timer:       240/240\n    \
             Keepalive timer:  80/80\n\
             \n"
        );
        let kernel = lab.run(d, "birdcl show protocols all kernel1").unwrap();
        assert!(kernel.contains("  Preference:     10\n  Input filter:   ACCEPT\n  Output filter:  calico_kernel_programming\n  Routes:         0 imported, 0 exported, 0 preferred\n"), "{kernel}");
        let v = view(&mut lab, d);
        v.sessions[1].state = BgpState::Active;
        v.sessions[1].last_error = Some("Socket: No route to host".into());
        let out = lab.run(d, "birdcl show protocols all Mesh_10_0_137_15").unwrap();
        assert!(out.ends_with(
            "  BGP state:          Active\n    Neighbor address: 10.0.137.15\n    Neighbor AS:      64512\n    Last error:       Socket: No route to host\n\n"
        ), "{out}");
    }

    /// k-w3 at s2 (seed L1565-1580), in the seed's order (BIRD's fib hash order; the view keeps
    /// the table's order).
    #[test]
    fn show_route_s2_c45() {
        let (mut lab, d, e3, e5) = node("k-w3", "10.3.33.1/31", "10.0.137.142/24");
        let cali = lab.iface(d, "cali718083fb40c", None);
        lab.st.ifaces[cali.idx()] = IfState {
            up: true,
            line_up: true,
            ..Default::default()
        };
        lab.st.time_ms = at(12, 4, 0, 0);
        let t = |s| at(12, 3, 52, s);
        let v = view(&mut lab, d);
        for n in ["10.0.137.12", "10.0.137.15", "10.0.137.112"] {
            v.sessions.push(mesh(n, 64512, t(40)));
        }
        *v.table.routes_mut() = vec![
            other(
                "10.0.0.0/8",
                "kernel1",
                TableDest::Via(hop(Some("10.3.33.0"), e3)),
                10,
                t(39),
            ),
            other("10.3.33.0/31", "direct1", TableDest::Device(hop(None, e3)), 240, t(38)),
            other("10.66.52.0/24", "static1", TableDest::Blackhole, 200, t(38)),
            other(
                "10.66.52.3/32",
                "kernel1",
                TableDest::Device(hop(None, cali)),
                10,
                t(40),
            ),
            bgp(
                "10.66.95.0/24",
                "Mesh_10_0_137_15",
                "10.0.137.15",
                "10.0.137.15",
                e5,
                &[],
                t(40),
            ),
            bgp(
                "10.66.111.0/24",
                "Mesh_10_0_137_12",
                "10.0.137.12",
                "10.0.137.12",
                e5,
                &[],
                t(40),
            ),
            other("10.0.137.0/24", "direct1", TableDest::Device(hop(None, e5)), 240, t(38)),
            bgp(
                "10.66.217.0/24",
                "Mesh_10_0_137_112",
                "10.0.137.112",
                "10.0.137.112",
                e5,
                &[],
                t(40),
            ),
        ];
        let out = lab.run(d, "birdcl show route").unwrap();
        let seed = "\
BIRD v0.3.3+birdv1.6.8 ready.
10.0.0.0/8 via 10.3.33.0 on ens3 [kernel1 03:52:39] * (10)
10.3.33.0/31 dev ens3 [direct1 03:52:38] * (240)
10.66.52.0/24 blackhole [static1 03:52:38] * (200)
10.66.52.3/32 dev cali718083fb40c [kernel1 03:52:40] * (10)
10.66.95.0/24 via 10.0.137.15 on ens5 [Mesh_10_0_137_15 03:52:40] * (100/0) [i]
10.66.111.0/24 via 10.0.137.12 on ens5 [Mesh_10_0_137_12 03:52:40] * (100/0) [i]
10.0.137.0/24 dev ens5 [direct1 03:52:38] * (240)
10.66.217.0/24 via 10.0.137.112 on ens5 [Mesh_10_0_137_112 03:52:40] * (100/0) [i]";
        let got: Vec<String> = out.lines().map(squash).collect();
        let want: Vec<String> = seed.lines().map(squash).collect();
        assert_eq!(got, want);
        assert!(out.contains("\n10.66.52.0/24      blackhole [static1 03:52:38] * (200)\n"));
        // C45 with the seed's elided kernel time.
        assert_lines(&out, "10.66.52.0/24 blackhole [static1 03:52:38] * (200)");
        let all = lab.run(d, "birdcl show route all 10.66.52.0/24").unwrap();
        assert!(all.ends_with(" * (200)\n\tType: static unicast univ\n"), "{all}");
        let all = lab.run(d, "birdcl show route 10.0.0.0/8 all").unwrap();
        assert!(all.ends_with("\tType: inherit unicast univ\n"), "{all}");
        let all = lab.run(d, "birdcl show route all protocol direct1").unwrap();
        assert_eq!(all.matches("\tType: device unicast univ\n").count(), 2);
        // iBGP: empty AS path, local preference present.
        let all = lab.run(d, "birdcl show route for 10.66.95.7 all").unwrap();
        assert!(all.ends_with(
            "\tType: BGP unicast univ\n\tBGP.origin: IGP\n\tBGP.as_path: \n\tBGP.next_hop: 10.0.137.15\n\tBGP.local_pref: 100\n"
        ), "{all}");
    }

    /// k-w2 at s3b (seed L1784-1791): an eBGP multihop route whose next hop resolves through
    /// the kernel route 10.0.0.0/8 via the leaf.
    #[test]
    fn show_route_all_s3b_c55() {
        let (mut lab, d, e3, _e5) = node("k-w2", "10.2.22.1/31", "10.0.137.112/24");
        lab.st.time_ms = at(20, 5, 20, 0);
        let mut r = bgp(
            "10.66.111.0/24",
            "Mesh_10_0_11_1",
            "10.0.11.1",
            "10.2.22.0",
            e3,
            &[65000],
            at(20, 5, 13, 2),
        );
        r.nh_metric = Some(NhMetric::Unknown);
        let mut alt = bgp(
            "10.66.111.0/24",
            "Mesh_10_0_137_15",
            "10.1.11.1",
            "10.2.22.0",
            e3,
            &[65001, 65000],
            at(20, 5, 13, 2),
        );
        alt.best = false;
        alt.nh_metric = Some(NhMetric::Unknown);
        let v = view(&mut lab, d);
        v.asn = 65002;
        v.table = vec![r, alt].into();
        let out = lab.run(d, "birdcl show route 10.66.111.0/24 all").unwrap();
        assert_eq!(
            out,
            "BIRD v0.3.3+birdv1.6.8 ready.\n\
             10.66.111.0/24     via 10.2.22.0 on ens3 [Mesh_10_0_11_1 05:13:02 from 10.0.11.1] * (100/?) [AS65000i]\n\
             \tType: BGP unicast univ\n\
             \tBGP.origin: IGP\n\
             \tBGP.as_path: 65000\n\
             \tBGP.next_hop: 10.0.11.1\n\
             \tBGP.local_pref: 100\n                   \
             via 10.2.22.0 on ens3 [Mesh_10_0_137_15 05:13:02 from 10.1.11.1] (100/?) [AS65000i]\n\
             \tType: BGP unicast univ\n\
             \tBGP.origin: IGP\n\
             \tBGP.as_path: 65001 65000\n\
             \tBGP.next_hop: 10.1.11.1\n\
             \tBGP.local_pref: 100\n"
        );
        // C55, whitespace-insensitive, tabs included.
        assert_lines(
            &out,
            "10.66.111.0/24 via 10.2.22.0 on ens3 [Mesh_10_0_11_1 05:13:02 from 10.0.11.1] * (100/?) [AS65000i]\n\
             BGP.as_path: 65000\n\
             BGP.next_hop: 10.0.11.1",
        );
        let primary = lab.run(d, "birdcl show route primary").unwrap();
        assert_eq!(primary.lines().count(), 2);
        // Unresolvable next hop and a multipath destination.
        let v = view(&mut lab, d);
        let table = v.table.routes_mut();
        table[0].nh_metric = Some(NhMetric::Unresolvable);
        table[0].dest = TableDest::Unreachable;
        table[1].dest = TableDest::Multipath(Box::new(
            [hop(Some("10.2.22.0"), e3), hop(Some("10.0.137.1"), _e5)].into(),
        ));
        let out = lab.run(d, "birdcl show route").unwrap();
        assert_eq!(
            out,
            "BIRD v0.3.3+birdv1.6.8 ready.\n\
             10.66.111.0/24     unreachable [Mesh_10_0_11_1 05:13:02 from 10.0.11.1] * (100/-) [AS65000i]\n                   \
             multipath [Mesh_10_0_137_15 05:13:02 from 10.1.11.1] (100/?) [AS65000i]\n\
             \tvia 10.2.22.0 on ens3 weight 1\n\
             \tvia 10.0.137.1 on ens5 weight 1\n"
        );
    }

    #[test]
    fn where_bird_does_not_run() {
        let (mut lab, d) = kw3_s1();
        assert!(lab.err(d, "birdcl show interfaces").contains("not modelled"));
        assert!(lab.err(d, "birdcl configure").contains("not modelled"));
        assert_eq!(lab.err(d, "birdcl show foo"), "No such command. Press `?' for help.");
        assert!(lab.err(d, "birdcl").contains("interactive"));
        assert!(lab.err(d, "birdcl show status now").starts_with("syntax error"));
        lab.st.devices[d.idx()].bgp = None;
        assert!(lab
            .err(d, "birdcl show status")
            .starts_with("Unable to connect to server control socket"));
        let (lab, kw1) = kw1_s0c();
        assert_eq!(lab.err(kw1, "birdcl show route"), "birdcl: command not found");
    }

    #[test]
    fn epoch_dates() {
        assert_eq!(full_time(0), "2025-08-01 00:00:00");
        assert_eq!(full_time(at(153, 0, 0, 0)), "2026-01-01 00:00:00");
        assert_eq!(full_time(at(2, 4, 54, 44)), "2025-08-03 04:54:44");
        assert_eq!(short_time(at(1, 5, 59, 59), at(0, 10, 0, 0)), "10:00:00");
        assert_eq!(short_time(at(1, 6, 0, 0), at(0, 10, 0, 0)), "2025-08-01");
    }
}
