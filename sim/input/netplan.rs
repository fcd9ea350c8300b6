//! netplan v2 YAML → a Linux host's interface addresses, MTUs and `proto static` routes.
//! Only `network.ethernets` is modelled: keys netplan has but fabsim does not model are
//! warnings, keys netplan does not have are errors. Never computes routing.

use std::fmt;
use std::marker::PhantomData;
use std::net::Ipv4Addr;

use ipnet::{Ipv4Net, Ipv6Net};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use super::topology::yaml::{self, OrderedMap};
use super::topology::{add_linux_iface, find_iface, parse_prefix};
use crate::diag::{Diagnostic, InputError, Severity, Span, TextOrigin};
use crate::model::{AddrConfig, DeviceId, DeviceKind, IfId, Network, RouteOrigin, StaticRoute};

/// Applies a netplan file to Linux host `dev`, as `netplan apply` does: the previous
/// netplan-derived state (addresses, MTUs, `RouteOrigin::Netplan` routes) is replaced and
/// manual routes are kept. Nothing changes when the file has errors. Returns the warnings.
pub fn apply_netplan(
    net: &mut Network,
    dev: DeviceId,
    text: &str,
    origin: &TextOrigin,
) -> Result<Vec<Diagnostic>, InputError> {
    apply(net, dev, text, origin, false).map(|a| a.warnings)
}

/// What `apply` reports besides success: warnings, and where each static address was written
/// (the topology's address checks point there).
pub(crate) struct Applied {
    pub warnings: Vec<Diagnostic>,
    pub addr_spans: Vec<(IfId, Span)>,
}

/// `apply_netplan`; with `create_missing` (a topology host without an `interfaces:` list) the
/// interfaces the file names are created in file order instead of being errors.
pub(crate) fn apply(
    net: &mut Network,
    dev: DeviceId,
    text: &str,
    origin: &TextOrigin,
    create_missing: bool,
) -> Result<Applied, InputError> {
    if net.device(dev).kind != DeviceKind::Linux {
        let msg = format!("netplan applies to Linux hosts; {} is not one", net.device(dev).name);
        return Err(Diagnostic::error(origin.span_at(0, 0), msg).into());
    }
    let root: Keyed<Root> = yaml::from_str(text, origin)?;
    let mut cx = Cx {
        origin,
        diags: Vec::new(),
    };
    let plans = cx.root(&root);
    let ifaces = cx.resolve(net, dev, &plans, create_missing);
    let (errors, mut warnings): (Vec<_>, Vec<_>) = cx.diags.into_iter().partition(|d| d.severity == Severity::Error);
    // `resolve` reports an error for every interface it could not find.
    let Some(ifaces) = ifaces
        .into_iter()
        .collect::<Option<Vec<IfId>>>()
        .filter(|_| errors.is_empty())
    else {
        return Err(InputError(errors));
    };
    warnings.sort_by(|a, b| a.span.cmp(&b.span));
    let plans: Vec<(IfId, IfPlan)> = ifaces.into_iter().zip(plans).collect();
    let addr_spans = plans
        .iter()
        .filter_map(|(i, p)| Some((*i, p.addr_span.clone()?)))
        .collect();
    commit(net, dev, plans);
    Ok(Applied { warnings, addr_spans })
}

/// What the file says about one interface.
struct IfPlan {
    name: String,
    span: Span,
    addr: AddrConfig,
    addr_span: Option<Span>,
    mtu: Option<u32>,
    routes: Vec<StaticRoute>,
}

/// `netplan apply`: the old netplan state goes, the new one comes; manual routes stay.
/// fabsim has no other persistent source of host addresses, so every address but lo's is
/// netplan's.
fn commit(net: &mut Network, dev: DeviceId, plans: Vec<(IfId, IfPlan)>) {
    for i in net.device(dev).ifaces.clone() {
        let iface = &mut net.interfaces[i.idx()];
        if iface.name != "lo" {
            iface.addr = AddrConfig::None;
            iface.mtu = 1500;
        }
    }
    let device = &mut net.devices[dev.idx()];
    device.statics.retain(|r| r.origin != RouteOrigin::Netplan);
    for (i, plan) in plans {
        device.statics.extend(plan.routes);
        let iface = &mut net.interfaces[i.idx()];
        // lo keeps 127.0.0.1/8 unless the file gives it an address.
        if iface.name != "lo" || plan.addr != AddrConfig::None {
            iface.addr = plan.addr;
        }
        iface.mtu = plan.mtu.unwrap_or(iface.mtu);
    }
}

// ---------------------------------------------------------------------------------------------
// The file as written. Mappings are read key by key (`Keyed`) so that every key keeps its
// location: unmodelled keys become warnings and unknown keys errors, all reported at once.

/// A mapping type read key by key.
trait Keys: Default {
    /// What the mapping is, for messages.
    const WHAT: &'static str;
    /// Keys fabsim reads.
    const READ: &'static [&'static str];
    /// Keys netplan has that fabsim does not model: a warning each.
    const UNMODELLED: &'static [&'static str];
    /// Reads the value of `key`, one of `READ`.
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

#[derive(Default)]
struct Keyed<T> {
    fields: T,
    /// The first key's location: where the mapping is.
    at: Option<Location>,
    unmodelled: Vec<Spanned<String>>,
    unknown: Vec<Spanned<String>>,
}

impl<'de, T: Keys> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<'de, T: Keys> Visitor<'de> for Visit<T> {
            type Value = Keyed<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a mapping ({})", T::WHAT)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut k = Keyed::<T>::default();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    k.at.get_or_insert(key.referenced);
                    if T::READ.contains(&key.value.as_str()) {
                        k.fields.read(&key.value, &mut map)?;
                        continue;
                    }
                    map.next_value::<IgnoredAny>()?;
                    if T::UNMODELLED.contains(&key.value.as_str()) {
                        k.unmodelled.push(key);
                    } else {
                        k.unknown.push(key);
                    }
                }
                Ok(k)
            }
        }
        d.deserialize_map(Visit(PhantomData))
    }
}

#[derive(Default)]
struct Root {
    network: Option<Keyed<NetworkSection>>,
}

impl Keys for Root {
    const WHAT: &'static str = "a netplan file";
    const READ: &'static [&'static str] = &["network"];
    const UNMODELLED: &'static [&'static str] = &[];
    fn read<'de, A: MapAccess<'de>>(&mut self, _key: &str, map: &mut A) -> Result<(), A::Error> {
        self.network = Some(map.next_value()?);
        Ok(())
    }
}

#[derive(Default)]
struct NetworkSection {
    version: Option<Spanned<u32>>,
    ethernets: OrderedMap<Keyed<Ethernet>>,
}

impl Keys for NetworkSection {
    const WHAT: &'static str = "`network`";
    // `renderer` (networkd or NetworkManager) changes nothing fabsim models: read and ignored
    // by design, without a warning.
    const READ: &'static [&'static str] = &["version", "renderer", "ethernets"];
    const UNMODELLED: &'static [&'static str] = &[
        "bonds",
        "bridges",
        "vlans",
        "tunnels",
        "vrfs",
        "wifis",
        "modems",
        "dummy-devices",
        "virtual-ethernets",
        "nm-devices",
    ];
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "version" => self.version = Some(map.next_value()?),
            "ethernets" => self.ethernets = map.next_value()?,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Ethernet {
    addresses: Vec<Spanned<String>>,
    dhcp4: Option<Spanned<bool>>,
    dhcp6: Option<Spanned<bool>>,
    routes: Vec<Keyed<Route>>,
    mtu: Option<Spanned<u32>>,
    gateway4: Option<Spanned<String>>,
    gateway6: Option<Spanned<String>>,
}

impl Keys for Ethernet {
    const WHAT: &'static str = "an ethernet";
    const READ: &'static [&'static str] = &["addresses", "dhcp4", "dhcp6", "routes", "mtu", "gateway4", "gateway6"];
    const UNMODELLED: &'static [&'static str] = &[
        "nameservers",
        "match",
        "set-name",
        "optional",
        "macaddress",
        "wakeonlan",
        "link-local",
        "accept-ra",
        "critical",
        "dhcp-identifier",
        "dhcp4-overrides",
        "dhcp6-overrides",
        "ipv6-privacy",
        "ipv6-address-generation",
        "ipv6-address-token",
        "ipv6-mtu",
        "routing-policy",
        "ignore-carrier",
        "activation-mode",
        "renderer",
        "emit-lldp",
    ];
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "addresses" => self.addresses = map.next_value()?,
            "dhcp4" => self.dhcp4 = Some(map.next_value()?),
            "dhcp6" => self.dhcp6 = Some(map.next_value()?),
            "routes" => self.routes = map.next_value()?,
            "mtu" => self.mtu = Some(map.next_value()?),
            "gateway4" => self.gateway4 = Some(map.next_value()?),
            _ => self.gateway6 = Some(map.next_value()?),
        }
        Ok(())
    }
}

#[derive(Default)]
struct Route {
    to: Option<Spanned<String>>,
    via: Option<Spanned<String>>,
    metric: Option<u32>,
    on_link: Option<Spanned<bool>>,
    scope: Option<Spanned<String>>,
    kind: Option<Spanned<String>>,
}

impl Keys for Route {
    const WHAT: &'static str = "a route";
    const READ: &'static [&'static str] = &["to", "via", "metric", "on-link", "scope", "type"];
    const UNMODELLED: &'static [&'static str] =
        &["from", "table", "mtu", "congestion-window", "advertised-receive-window"];
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "to" => self.to = Some(map.next_value()?),
            "via" => self.via = Some(map.next_value()?),
            "metric" => self.metric = Some(map.next_value()?),
            "on-link" => self.on_link = Some(map.next_value()?),
            "scope" => self.scope = Some(map.next_value()?),
            _ => self.kind = Some(map.next_value()?),
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// From the file to per-interface plans, collecting every diagnostic.

struct Cx<'o> {
    origin: &'o TextOrigin,
    diags: Vec<Diagnostic>,
}

impl Cx<'_> {
    fn span<T>(&self, v: &Spanned<T>) -> Span {
        yaml::span(self.origin, &v.referenced)
    }

    fn at(&self, loc: Option<&Location>) -> Span {
        loc.map_or_else(|| self.origin.span_at(0, 0), |l| yaml::span(self.origin, l))
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| d.severity == Severity::Error)
    }

    fn warn(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::warning(span, msg));
    }

    /// Unmodelled keys are warnings, unknown keys errors.
    fn keys<T: Keys>(&mut self, k: &Keyed<T>) {
        for key in &k.unmodelled {
            let msg = format!("`{}` is not modelled by fabsim; ignored", key.value);
            self.warn(self.span(key), msg);
        }
        for key in &k.unknown {
            let mut msg = format!(
                "unknown netplan key `{}` in {} (expected one of: {}",
                key.value,
                T::WHAT,
                T::READ.join(", ")
            );
            if let Some(ignored) = T::UNMODELLED.first() {
                msg += &format!("; or a key fabsim ignores, such as {ignored}");
            }
            msg.push(')');
            self.error(self.span(key), msg);
        }
    }

    fn root(&mut self, root: &Keyed<Root>) -> Vec<IfPlan> {
        self.keys(root);
        let Some(network) = &root.fields.network else {
            self.error(self.at(root.at.as_ref()), "expected a `network:` mapping");
            return Vec::new();
        };
        self.keys(network);
        match &network.fields.version {
            None => self.error(self.at(root.at.as_ref()), "missing `version: 2` under `network:`"),
            Some(v) if v.value != 2 => self.error(self.span(v), format!("expected `version: 2`, found {}", v.value)),
            Some(_) => {}
        }
        let ethernets = &network.fields.ethernets.0;
        ethernets.iter().map(|(name, eth)| self.ethernet(name, eth)).collect()
    }

    fn ethernet(&mut self, name: &Spanned<String>, eth: &Keyed<Ethernet>) -> IfPlan {
        self.keys(eth);
        let e = &eth.fields;
        let mut plan = IfPlan {
            name: name.value.clone(),
            span: self.span(name),
            addr: AddrConfig::None,
            addr_span: None,
            mtu: e.mtu.as_ref().and_then(|m| self.mtu(m)),
            routes: Vec::new(),
        };
        for a in &e.addresses {
            self.address(&mut plan, a);
        }
        self.dhcp(&mut plan, e);
        if let Some(gw) = &e.gateway4 {
            self.gateway4(&mut plan, gw);
        }
        if let Some(v6) = &e.gateway6 {
            self.warn(self.span(v6), "IPv6 is not modelled; `gateway6` ignored");
        }
        for r in &e.routes {
            if let Some(route) = self.route(&plan, r) {
                plan.routes.push(route);
            }
        }
        plan
    }

    fn mtu(&mut self, m: &Spanned<u32>) -> Option<u32> {
        if (68..=65535).contains(&m.value) {
            return Some(m.value);
        }
        self.error(
            self.span(m),
            format!("expected an MTU between 68 and 65535, found {}", m.value),
        );
        None
    }

    fn address(&mut self, plan: &mut IfPlan, a: &Spanned<String>) {
        let span = self.span(a);
        if a.value.trim().parse::<Ipv6Net>().is_ok() {
            self.warn(span, format!("IPv6 is not modelled; `{}` ignored", a.value));
            return;
        }
        match parse_prefix(&a.value) {
            Err(msg) => self.error(span, msg),
            Ok(_) if plan.addr_span.is_some() => {
                let msg = format!("fabsim models one IPv4 address per interface; `{}` ignored", a.value);
                self.warn(span, msg);
            }
            Ok(net) => {
                plan.addr = AddrConfig::Static(net);
                plan.addr_span = Some(span);
            }
        }
    }

    fn dhcp(&mut self, plan: &mut IfPlan, e: &Ethernet) {
        if let Some(d6) = e.dhcp6.as_ref().filter(|d| d.value) {
            self.warn(self.span(d6), "IPv6 is not modelled; `dhcp6: true` ignored");
        }
        let Some(d4) = e.dhcp4.as_ref().filter(|d| d.value) else {
            return;
        };
        if plan.addr_span.is_some() {
            let msg = "fabsim models one IPv4 address per interface; the static address wins over dhcp4";
            self.warn(self.span(d4), msg);
        } else {
            plan.addr = AddrConfig::Dhcp;
        }
    }

    /// Deprecated by netplan but still valid: a default route through that gateway.
    fn gateway4(&mut self, plan: &mut IfPlan, gw: &Spanned<String>) {
        let span = self.span(gw);
        let Some(via) = self.ipv4(gw) else { return };
        let msg = format!("`gateway4` is deprecated; netplan prefers `routes: [{{to: default, via: {via}}}]`");
        self.warn(span.clone(), msg);
        plan.routes
            .push(static_route(Ipv4Net::default(), Some(via), &plan.name, 0, span));
    }

    fn ipv4(&mut self, v: &Spanned<String>) -> Option<Ipv4Addr> {
        let parsed = v.value.trim().parse().ok();
        if parsed.is_none() {
            let msg = format!("expected an IPv4 address like 10.0.0.1, found `{}`", v.value);
            self.error(self.span(v), msg);
        }
        parsed
    }

    fn route(&mut self, plan: &IfPlan, r: &Keyed<Route>) -> Option<StaticRoute> {
        self.keys(r);
        let f = &r.fields;
        let Some(to) = &f.to else {
            let at =
                r.at.as_ref()
                    .map_or_else(|| plan.span.clone(), |l| yaml::span(self.origin, l));
            self.error(at, "a route needs `to:` (a prefix like 10.0.0.0/8, or `default`)");
            return None;
        };
        let ipv6 = |s: &Option<Spanned<String>>| s.as_ref().is_some_and(|v| v.value.contains(':'));
        if ipv6(&f.to) || ipv6(&f.via) {
            self.warn(self.span(to), "IPv6 is not modelled; route ignored");
            return None;
        }
        let prefix = self.destination(to)?;
        let via = match &f.via {
            Some(v) => Some(self.ipv4(v)?),
            None => None,
        };
        let mut route = static_route(prefix, via, &plan.name, f.metric.unwrap_or(0), self.span(to));
        route.onlink = f.on_link.as_ref().is_some_and(|o| o.value);
        route.blackhole = self.route_type(f)?;
        self.route_flags(f);
        Some(route)
    }

    /// `default`, a prefix, or a bare address (a /32).
    fn destination(&mut self, to: &Spanned<String>) -> Option<Ipv4Net> {
        let text = to.value.trim();
        let parsed = match text {
            "default" => Some(Ipv4Net::default()),
            _ => text
                .parse()
                .ok()
                .or_else(|| text.parse::<Ipv4Addr>().ok().map(Ipv4Net::from)),
        };
        let Some(net) = parsed else {
            let msg = format!("expected a route destination like 10.0.0.0/8 or `default`, found `{text}`");
            self.error(self.span(to), msg);
            return None;
        };
        if net.trunc() != net {
            let msg = format!("route destination {net} has host bits set; using {}", net.trunc());
            self.warn(self.span(to), msg);
        }
        Some(net.trunc())
    }

    /// `type: blackhole` is modelled; other non-unicast types are not (the route is ignored).
    fn route_type(&mut self, f: &Route) -> Option<bool> {
        match f.kind.as_ref().map(|k| (k, k.value.as_str())) {
            None | Some((_, "unicast")) => Some(false),
            Some((_, "blackhole")) => Some(true),
            Some((k, other)) => {
                self.warn(
                    self.span(k),
                    format!("route type `{other}` is not modelled; route ignored"),
                );
                None
            }
        }
    }

    /// Flags the model infers or does not have: warn only when they would change something.
    fn route_flags(&mut self, f: &Route) {
        if let Some(scope) = &f.scope {
            // `global` (with a gateway) and `link` (without) are what the model infers.
            if !matches!(scope.value.as_str(), "global" | "link") {
                self.warn(
                    self.span(scope),
                    format!("route scope `{}` is not modelled; ignored", scope.value),
                );
            }
        }
    }

    /// The interface of each plan; unknown names are errors unless `create` (then created).
    fn resolve(&mut self, net: &mut Network, dev: DeviceId, plans: &[IfPlan], create: bool) -> Vec<Option<IfId>> {
        let mut ids = Vec::new();
        for p in plans {
            let found = find_iface(net, dev, &p.name);
            let id = match found {
                Some(id) => Some(id),
                // Creating would change the network, and a file with errors changes nothing.
                None if create && self.has_errors() => None,
                None if create => Some(add_linux_iface(net, dev, &p.name, p.span.clone())),
                None => {
                    let names: Vec<&str> = net
                        .device(dev)
                        .ifaces
                        .iter()
                        .map(|i| net.iface(*i).name.as_str())
                        .collect();
                    let msg = format!(
                        "unknown interface `{}` on {} (it has {})",
                        p.name,
                        net.device(dev).name,
                        names.join(", ")
                    );
                    self.error(p.span.clone(), msg);
                    None
                }
            };
            ids.push(id);
        }
        ids
    }
}

fn static_route(prefix: Ipv4Net, via: Option<Ipv4Addr>, dev: &str, metric: u32, span: Span) -> StaticRoute {
    StaticRoute {
        prefix,
        via,
        dev: Some(dev.to_string()),
        distance: None,
        metric,
        blackhole: false,
        onlink: false,
        origin: RouteOrigin::Netplan,
        span,
    }
}
