//! Differential tests: fabsim against real FRR 8.4 and BIRD 1.6. Each case exports a network
//! at a step as a network-namespace lab (`fabsim export --to netns --fast-timers`), builds it
//! with `up.sh`, waits until the real daemons agree with fabsim (or a deadline passes) and
//! fails with the differences: every device's kernel routes (prefix, next hops, protocol
//! class), BGP session states and per-neighbour received counts, and the ping matrix between
//! all hosts and pods (not when the lab needs IPIP, which this kernel lacks: then only the
//! control plane is compared, and the test says so). `down.sh` always runs (a guard's Drop).
//! The seed lab's later steps are reached as the runbook reaches them (`seed_through`): built
//! at s4, the running lab is moved step by step (up.sh's changed lines, BIRD reconfigured or
//! restarted), since which leaf wins a redistribution race depends on the order of events.
//!
//! Needs root, `ip netns`, /usr/lib/frr/zebra and bird; without them each case skips with a
//! message, unless FABSIM_DIFFERENTIAL=required (CI), which turns a skip into a failure.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fabsim::dataplane::{probe, ProbeKind, ProbeOutcome};
use fabsim::engine::{BgpState, Proto, State, DEFAULT_SEED};
use fabsim::export::{self, kernel_ifname, netns, netns_name, Options, Switches, Target};
use fabsim::model::{DeviceId, DeviceKind, Network};
use fabsim::scenario::{self, endpoints};

/// How long real daemons get to reach fabsim's converged state (fast timers: OSPF dead 4 s,
/// BGP connect retry 1 s, BIRD connect delay 2 s / retry 5 s from Calico's template). Twice the 60 s
/// it had: with the suite's labs starting together on CI's two cores, one
/// OSPF adjacency of gen-2x4x2-ospf-mesh was still forming after 60 s (the lab's routes
/// avoided that link; fabsim's were the converged ones).
const CONVERGE: Duration = Duration::from_secs(120);

/// How every lab here is exported: FRR containers for the switches, the short timers both sides
/// share so that a lab converges in seconds.
fn lab_options(prefix: &str) -> Options {
    Options {
        prefix: prefix.to_string(),
        fast_timers: true,
        switches: Switches::Frr,
    }
}

/// One lab at a time: a lab is 25 namespaces and some 30 daemons, and the machines this runs
/// on have 2 cores.
static ONE_LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Why this machine cannot run the labs, if it cannot.
fn missing_prerequisite() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root".into());
    }
    if !Command::new("ip")
        .args(["netns", "list"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some("no `ip netns`".into());
    }
    for bin in [
        "/usr/lib/frr/zebra",
        "/usr/lib/frr/ospfd",
        "/usr/lib/frr/bgpd",
        "/usr/bin/vtysh",
    ] {
        if !Path::new(bin).exists() {
            return Some(format!("no {bin} (apt-get install frr)"));
        }
    }
    if !Command::new("sh")
        .args(["-c", "command -v bird && command -v birdc"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some("no bird/birdc (apt-get install bird)".into());
    }
    None
}

/// True when the case can run; prints why not, or panics when FABSIM_DIFFERENTIAL=required.
fn can_run(case: &str) -> bool {
    let Some(why) = missing_prerequisite() else { return true };
    let required = std::env::var("FABSIM_DIFFERENTIAL").is_ok_and(|v| v == "required");
    assert!(!required, "differential {case}: FABSIM_DIFFERENTIAL=required but {why}");
    eprintln!("SKIP differential {case}: {why} (set FABSIM_DIFFERENTIAL=required to make this fail)");
    false
}

/// A built lab; `down.sh` runs when it goes out of scope, also when the test panics.
struct Lab {
    dir: PathBuf,
    prefix: String,
}

impl Drop for Lab {
    fn drop(&mut self) {
        let out = Command::new("sh").arg(self.dir.join("down.sh")).output();
        if let Ok(o) = out {
            if !o.status.success() {
                eprintln!("down.sh {}: {}", self.prefix, String::from_utf8_lossy(&o.stderr));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Export `net` at `st` and bring the lab up under a prefix unique to this process and case.
fn build(case: &str, net: &Network, st: &State) -> Lab {
    let prefix = format!("fsd{}{}", std::process::id() % 100_000, case_tag(case));
    let dir = std::env::temp_dir().join(format!("fabsim-differential-{prefix}"));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = lab_options(&prefix);
    export::export(net, st, Target::Netns, &opts)
        .write(&dir)
        .expect("write the lab");
    let lab = Lab { dir, prefix };
    let up = Command::new("sh")
        .arg(lab.dir.join("up.sh"))
        .output()
        .expect("run up.sh");
    assert!(
        up.status.success(),
        "up.sh failed for {case}:\n{}\n{}",
        String::from_utf8_lossy(&up.stdout),
        String::from_utf8_lossy(&up.stderr)
    );
    lab
}

/// A short tag per case for the prefix (namespace names stay short).
fn case_tag(case: &str) -> String {
    let sum: u32 = case.bytes().map(u32::from).sum();
    format!("{:03x}", sum % 4096)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a command");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The protocol class a route belongs to, as the model and the kernel's `proto` both say it.
fn class_of_model(p: Proto) -> &'static str {
    match p {
        Proto::Connected => "connected",
        Proto::Static | Proto::Dhcp => "static",
        Proto::OspfIntra | Proto::OspfInter | Proto::OspfE1 | Proto::OspfE2 => "ospf",
        Proto::BgpExternal | Proto::BgpInternal => "bgp",
        Proto::Bird => "bird",
    }
}

fn class_of_kernel(proto: &str) -> &'static str {
    match proto {
        "kernel" => "connected",
        "ospf" => "ospf",
        "bgp" => "bgp",
        "bird" => "bird",
        _ => "static", // static, boot, dhcp, felix's 80
    }
}

/// One route as compared: class and sorted next hops (`GW@IF`, `@IF`, `blackhole`).
type RouteKey = (&'static str, Vec<String>);

fn model_routes(net: &Network, st: &State, dev: DeviceId) -> BTreeMap<String, RouteKey> {
    let mut out = BTreeMap::new();
    for r in st.devices[dev.idx()].fib.iter() {
        if r.nexthops.iter().any(|h| net.iface(h.iface).tunnel.is_some()) {
            continue; // not built in the lab (export::limits)
        }
        let mut hops: Vec<String> = if r.unreachable {
            vec!["unreachable".into()]
        } else if r.blackhole || r.nexthops.is_empty() {
            vec!["blackhole".into()]
        } else {
            r.nexthops
                .iter()
                .map(|h| {
                    format!(
                        "{}@{}",
                        h.via.map(|a| a.to_string()).unwrap_or_default(),
                        kernel_ifname(net, h.iface)
                    )
                })
                .collect()
        };
        hops.sort();
        // A Linux table may hold one prefix at several metrics; the lowest is the one used.
        out.entry(r.prefix.to_string())
            .or_insert((class_of_model(r.proto), hops));
    }
    out
}

fn kernel_routes(ns: &str) -> BTreeMap<String, RouteKey> {
    let text = run(Command::new("ip").args(["-j", "-n", ns, "route", "show", "table", "main"]));
    let routes: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
    let mut out = BTreeMap::new();
    for r in routes {
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let mut dst = s("dst");
        if dst == "default" {
            dst = "0.0.0.0/0".into();
        } else if !dst.contains('/') {
            dst.push_str("/32");
        }
        let mut hops: Vec<String> = if matches!(s("type").as_str(), "blackhole" | "unreachable") {
            vec![s("type")]
        } else if let Some(nhs) = r.get("nexthops").and_then(|v| v.as_array()) {
            nhs.iter()
                .map(|h| {
                    let g = h.get("gateway").and_then(|v| v.as_str()).unwrap_or("");
                    let d = h.get("dev").and_then(|v| v.as_str()).unwrap_or("");
                    format!("{g}@{d}")
                })
                .collect()
        } else {
            vec![format!("{}@{}", s("gateway"), s("dev"))]
        };
        hops.sort();
        out.entry(dst).or_insert((class_of_kernel(&s("protocol")), hops));
    }
    out
}

/// BGP sessions as `(neighbour) -> (state, received)`; received is FRR's pfxRcd / BIRD's
/// imported count, None when the speaker does not show one (not established).
type Sessions = BTreeMap<String, (String, Option<u64>)>;

fn model_sessions(st: &State, dev: DeviceId, bird: bool) -> Sessions {
    let Some(view) = &st.devices[dev.idx()].bgp else {
        return Sessions::new();
    };
    view.sessions
        .iter()
        .map(|s| {
            let up = s.state == BgpState::Established;
            let count = if bird { s.pfx_acc } else { s.pfx_rcvd };
            let state = if up { "Established" } else { "down" };
            (
                s.neighbor.to_string(),
                (state.to_string(), up.then_some(u64::from(count))),
            )
        })
        .collect()
}

fn frr_sessions(ns: &str) -> Sessions {
    let text = run(Command::new("vtysh").args(["-N", ns, "-c", "show ip bgp summary json"]));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut out = Sessions::new();
    if let Some(peers) = v.pointer("/ipv4Unicast/peers").and_then(|p| p.as_object()) {
        for (addr, p) in peers {
            let state = p.get("state").and_then(|s| s.as_str()).unwrap_or("?");
            let up = state == "Established";
            let state = if up { "Established" } else { "down" };
            let rcvd = p.get("pfxRcd").and_then(|n| n.as_u64());
            out.insert(addr.clone(), (state.to_string(), if up { rcvd } else { None }));
        }
    }
    out
}

/// BIRD's `show protocols all`: each BGP protocol's neighbour, state and imported routes.
fn bird_sessions(sock: &str) -> Sessions {
    let text = run(Command::new("birdc").args(["-s", sock, "show", "protocols", "all"]));
    let mut out = Sessions::new();
    let (mut bgp, mut state, mut imported, mut neighbor) = (false, String::new(), None, None::<String>);
    let mut flush = |neighbor: &mut Option<String>, state: &str, imported: Option<u64>| {
        if let Some(n) = neighbor.take() {
            let up = state == "Established";
            let state = if up { "Established" } else { "down" };
            out.insert(n, (state.to_string(), if up { imported.or(Some(0)) } else { None }));
        }
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !line.starts_with(' ') && words.len() >= 2 && !line.starts_with("BIRD") && words[0] != "name" {
            flush(&mut neighbor, &state, imported);
            bgp = words[1] == "BGP";
            state = words.get(5).unwrap_or(&"").to_string();
            imported = None;
        } else if bgp && words.first() == Some(&"Neighbor") && words.get(1) == Some(&"address:") {
            neighbor = words.get(2).map(|s| s.to_string());
        } else if bgp && words.first() == Some(&"Routes:") {
            imported = words.get(1).and_then(|n| n.parse().ok());
        }
    }
    flush(&mut neighbor, &state, imported);
    out
}

/// Every difference between fabsim and the lab, one readable line each.
fn differences(net: &Network, st: &State, lab: &Lab, data_plane: bool) -> Vec<String> {
    let mut diffs = Vec::new();
    for (i, dev) in net.devices.iter().enumerate() {
        let id = DeviceId(i as u32);
        if !st.devices[i].powered || dev.kind == DeviceKind::External {
            continue;
        }
        let ns = netns_name(&lab.prefix, net, id);
        let (want, got) = (model_routes(net, st, id), kernel_routes(&ns));
        for (prefix, w) in &want {
            match got.get(prefix) {
                None => diffs.push(format!("{}: route {prefix} {w:?} missing in the lab", dev.name)),
                Some(g) if g != w => diffs.push(format!("{}: route {prefix}: fabsim {w:?}, lab {g:?}", dev.name)),
                _ => {}
            }
        }
        for (prefix, g) in &got {
            if !want.contains_key(prefix) {
                diffs.push(format!("{}: route {prefix} {g:?} only in the lab", dev.name));
            }
        }
        let bird = dev.bird.is_some();
        let (want, got) = match dev.kind {
            DeviceKind::Eos => (model_sessions(st, id, false), frr_sessions(&ns)),
            _ if bird => (
                model_sessions(st, id, true),
                bird_sessions(&netns::bird_socket(&lab.prefix, net, id)),
            ),
            _ => continue,
        };
        if want != got {
            diffs.push(format!(
                "{}: BGP sessions (state, received): fabsim {want:?}, lab {got:?}",
                dev.name
            ));
        }
    }
    if data_plane {
        diffs.extend(ping_differences(net, st, lab));
    }
    diffs
}

/// Every host and pod pings every other once (`ping -c1 -W1`), one source's pings at a time
/// in parallel; compared with fabsim's probe of the same pair.
fn ping_differences(net: &Network, st: &State, lab: &Lab) -> Vec<String> {
    let eps = endpoints(net, st);
    let mut diffs = Vec::new();
    for a in &eps {
        let ns = netns_name(&lab.prefix, net, a.device);
        let children: Vec<_> = eps
            .iter()
            .filter(|b| b.addr != a.addr)
            .map(|b| {
                let child = Command::new("ip")
                    .args([
                        "netns",
                        "exec",
                        &ns,
                        "ping",
                        "-n",
                        "-q",
                        "-c1",
                        "-W1",
                        &b.addr.to_string(),
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("spawn ping");
                (b, child)
            })
            .collect();
        for (b, mut child) in children {
            let real = child.wait().is_ok_and(|s| s.success());
            let p = probe(net, st, a.device, b.addr, 64, ProbeKind::Echo, 1);
            let model = matches!(p.outcome, ProbeOutcome::Reply { .. });
            if real != model {
                diffs.push(format!(
                    "ping {} -> {} ({}): fabsim {}, lab {}",
                    a.name,
                    b.name,
                    b.addr,
                    if model { "answers" } else { "no answer" },
                    if real { "answers" } else { "no answer" }
                ));
            }
        }
    }
    diffs
}

/// Build the lab for `run`'s state, wait for agreement, fail with the differences.
fn compare(case: &str, run: &scenario::Run) {
    if !can_run(case) {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let (net, st) = (run.engine.network(), run.engine.state());
    let data_plane = !export::needs_ipip(net, st);
    if !data_plane {
        eprintln!(
            "differential {case}: the lab needs IPIP, which this kernel lacks: control plane only, no ping matrix"
        );
    }
    let lab = build(case, net, st);
    agree(case, net, st, &lab, data_plane);
}

/// Wait until the lab agrees with fabsim's `st`; fail with the differences if it does not.
fn agree(case: &str, net: &Network, st: &State, lab: &Lab, data_plane: bool) {
    let diffs = settle(case, net, st, lab, data_plane, CONVERGE);
    assert!(
        diffs.is_empty(),
        "differential {case}: {} differences between fabsim and real FRR/BIRD:\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    );
}

/// Wait until the lab agrees with fabsim's `st`, or CONVERGE passes, or the differences have
/// stayed the same for `patience` (the lab has settled elsewhere); the differences left.
fn settle(case: &str, net: &Network, st: &State, lab: &Lab, data_plane: bool, patience: Duration) -> Vec<String> {
    let started = Instant::now();
    let mut unchanged = Instant::now();
    // Control plane first (cheap to poll), the ping matrix once it agrees.
    let mut diffs = differences(net, st, lab, false);
    while !diffs.is_empty() && started.elapsed() < CONVERGE && unchanged.elapsed() < patience {
        std::thread::sleep(Duration::from_secs(2));
        let now = differences(net, st, lab, false);
        if now != diffs {
            unchanged = Instant::now();
        }
        diffs = now;
    }
    if diffs.is_empty() && data_plane {
        diffs = ping_differences(net, st, lab);
    }
    eprintln!(
        "differential {case}: compared after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    diffs
}

/// The seed lab reached in the lab the way fabsim reached it: built at `chain[0]`, then moved
/// through every step after it as the runbook moved fabsim: compared at every station of
/// `chain` (routes, sessions, the ping matrix), the control plane's differences printed after
/// the steps between. Which leaf
/// redistributes a prefix into OSPF first decides who keeps it (eBGP's distance 200 loses to
/// OSPF's 110), so a lab built at a later step from scratch may settle on another, equally
/// stable, winner: the lab must live through the same order of events.
fn seed_through(chain: &[&str]) {
    let (from, to) = (chain[0], chain[chain.len() - 1]);
    let case = format!("seed-{}", chain.join("-"));
    if !can_run(&case) {
        return;
    }
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let steps = waypoints(from, to);
    assert!(
        steps.iter().all(|w| !export::needs_ipip(&w.net, &w.st)),
        "differential {case}: the seed lab needs IPIP on the way, which this lab cannot build"
    );
    let first = &steps[0];
    let lab = build(&case, &first.net, &first.st);
    agree(&format!("{case} (at {from})"), &first.net, &first.st, &lab, true);
    for pair in steps.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        move_lab(&case, &lab, a, b);
        let at = format!("{case} (at {})", b.step);
        if chain.contains(&b.step.as_str()) {
            agree(&at, &b.net, &b.st, &lab, true);
        } else {
            // Between stations the differences are reported, not fatal: a step's race may
            // settle differently in the lab and the next step's event settle it again.
            for d in settle(&at, &b.net, &b.st, &lab, false, BETWEEN_STATIONS) {
                eprintln!("differential {at}: {d}");
            }
        }
    }
}

/// How long differences after a step between stations must stay the same for the lab to count
/// as settled (FRR's and BIRD's fast timers are 1-5 s).
const BETWEEN_STATIONS: Duration = Duration::from_secs(8);

/// The network after one step of the seed-lab scenario.
struct Waypoint {
    step: String,
    net: Network,
    st: State,
    /// The scenario's pod start (`timing: pod_start`): a replaced pod's creation to its BIRD.
    pod_start: Duration,
}

/// The seed-lab scenario replayed to `to`: the network after `from` and after every later step.
fn waypoints(from: &str, to: &str) -> Vec<Waypoint> {
    let opened = common::seed_scenario(to);
    let pod_start = Duration::from_millis(opened.scenario.as_ref().map_or(0, |s| s.timing.pod_start_ms));
    let mut out: Vec<Waypoint> = Vec::new();
    scenario::run_watched(&opened, Some(to), DEFAULT_SEED, &mut |report, engine, _| {
        if report.id == from || !out.is_empty() {
            out.push(Waypoint {
                step: report.id.clone(),
                net: engine.network().clone(),
                st: engine.state().clone(),
                pod_start,
            });
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.len() > 1 && out.last().is_some_and(|w| w.step == to),
        "the seed-lab scenario has no step {from} before {to}"
    );
    out
}

/// Move the running lab from `a`'s export to `b`'s as the step between them moved fabsim:
/// up.sh's changed lines (`shell_changes`: pods, veths, addresses, felix's routes, nftables),
/// the changed BIRD files written and reconfigured (`birdc configure`, as confd has BIRD do),
/// and the calico-node restarts of the step, in fabsim's order (`restarted`). Any other
/// change (FRR's files) is a transition this harness does not make: it fails.
fn move_lab(case: &str, lab: &Lab, a: &Waypoint, b: &Waypoint) {
    let opts = lab_options(&lab.prefix);
    let old = export::export(&a.net, &a.st, Target::Netns, &opts);
    let new = export::export(&b.net, &b.st, Target::Netns, &opts);
    let old_text = |p: &Path| old.files.iter().find(|f| f.path == p).map(|f| f.text.as_str());
    let changed: Vec<&export::LabFile> = new
        .files
        .iter()
        .filter(|f| old_text(&f.path) != Some(f.text.as_str()))
        .collect();
    let reconfigure = bird_reconfigurations(case, b, &changed);
    new.write(&lab.dir).expect("write the lab's new files");
    let reloaded: Vec<String> = changed
        .iter()
        .map(|f| format!("\"$LAB/{}\"", f.path.display()))
        .collect();
    let up = |l: &export::Lab| {
        l.files
            .iter()
            .find(|f| f.path == Path::new("up.sh"))
            .map(|f| f.text.clone())
    };
    let (old_up, new_up) = (up(&old).unwrap_or_default(), up(&new).unwrap_or_default());
    let body = shell_changes(&old_up, &new_up, &reloaded)
        .unwrap_or_else(|e| panic!("differential {case}: at {}: {e}", b.step));
    run_change(case, lab, &body);
    let restarts = restarted(a, b);
    eprintln!(
        "differential {case}: {} → {}: BIRD restarted on {:?}, reconfigured on {:?}",
        a.step,
        b.step,
        restarts.iter().map(|d| &b.net.device(*d).name).collect::<Vec<_>>(),
        reconfigure.values().map(|d| &b.net.device(*d).name).collect::<Vec<_>>()
    );
    for dev in reconfigure.values().filter(|d| !restarts.contains(d)) {
        let sock = netns::bird_socket(&lab.prefix, &b.net, *dev);
        let out = run(Command::new("birdc").args(["-s", &sock, "configure"]));
        assert!(
            out.contains("Reconfigur"),
            "differential {case}: birdc configure on {}: {out}",
            b.net.device(*dev).name
        );
    }
    for dev in restarts {
        restart_bird(case, lab, &new_up, b, dev);
    }
}

/// The nodes whose BIRD must reread its changed files, from the lab's changed files: up.sh
/// and nftables files are `shell_changes`' to apply, any other file must be a BIRD node's.
fn bird_reconfigurations(case: &str, b: &Waypoint, changed: &[&export::LabFile]) -> BTreeMap<u32, DeviceId> {
    let mut out = BTreeMap::new();
    for f in changed {
        if f.path == Path::new("up.sh") || f.path.extension().is_some_and(|e| e == "nft") {
            continue;
        }
        let dev = bird_node_of(&b.net, &f.path)
            .unwrap_or_else(|| panic!("differential {case}: {} changes at {}", f.path.display(), b.step));
        out.insert(dev.0, dev);
    }
    out
}

/// The Calico node whose BIRD reads the lab file `path` (`NODE/…`), if it is one.
fn bird_node_of(net: &Network, path: &Path) -> Option<DeviceId> {
    let dir = path.parent()?.to_str()?;
    let i = net.devices.iter().position(|x| export::file_name(&x.name) == dir)?;
    let dev = DeviceId(i as u32);
    (net.device(dev).bird.is_some() && net.device(dev).kind == DeviceKind::Linux).then_some(dev)
}

/// Run `body` (up.sh lines) on the running lab through `netns::change_script`.
fn run_change(case: &str, lab: &Lab, body: &str) {
    let script = lab.dir.join("change.sh");
    std::fs::write(&script, netns::change_script(&lab.prefix, body)).expect("write change.sh");
    let out = Command::new("sh").arg(&script).output().expect("run change.sh");
    assert!(
        out.status.success(),
        "differential {case}: changing the lab failed:\n{body}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The BIRD nodes the step restarted (a calico-node rollout or a deleted calico-node pod), in
/// the order fabsim restarted them. A restart closes every session of the node's BIRD, a
/// neighbour's restart only the one with it: a node whose every session went down and came
/// back during the step was restarted, and the one restarted first had its sessions back
/// first (the rollout moves on only when a node is Ready, all of its sessions Established).
/// A node with a single session cannot tell the two apart: its peer's restart would count as
/// its own (none in the seed lab, where every node has its leaf and, until s6-mesh-off, the
/// mesh; after it no step restarts anything).
fn restarted(a: &Waypoint, b: &Waypoint) -> Vec<DeviceId> {
    let since = |st: &State, i: usize| -> BTreeMap<std::net::Ipv4Addr, (BgpState, u64)> {
        st.devices[i]
            .bgp
            .iter()
            .flat_map(|v| &v.sessions)
            .map(|s| (s.neighbor, (s.state, s.since_ms)))
            .collect()
    };
    let mut out: Vec<(u64, DeviceId)> = Vec::new();
    for (i, dev) in b.net.devices.iter().enumerate() {
        if dev.bird.is_none() || dev.kind != DeviceKind::Linux {
            continue;
        }
        let (old, new) = (since(&a.st, i), since(&b.st, i));
        let all_back = !new.is_empty()
            && new.iter().all(|(n, (state, t))| {
                *state == BgpState::Established
                    && old.get(n).is_some_and(|(s, o)| *s == BgpState::Established && o != t)
            });
        if all_back {
            let first_back = new.values().map(|(_, t)| *t).min().unwrap_or_default();
            out.push((first_back, DeviceId(i as u32)));
        }
    }
    out.sort();
    out.into_iter().map(|(_, d)| d).collect()
}

/// One node of a calico-node rollout: its BIRD killed (`terminationGracePeriodSeconds: 0`;
/// SIGTERM, so that BIRD closes its sessions with a Cease as fabsim's does), started again on
/// the node's files after the scenario's `pod_start`, as in fabsim, and the rollout moves on
/// once every session of the node is Established (calico-node's readiness, `-bird-ready`).
fn restart_bird(case: &str, lab: &Lab, up_sh: &str, b: &Waypoint, dev: DeviceId) {
    let name = export::file_name(&b.net.device(dev).name);
    let ns = netns_name(&lab.prefix, &b.net, dev);
    let start = up_sh
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["bird_ns", ns.as_str()]))
        .unwrap_or_else(|| panic!("differential {case}: up.sh starts no BIRD in {ns}"));
    run_change(case, lab, &format!("{}\n", stop_bird(&name)));
    std::thread::sleep(b.pod_start);
    run_change(case, lab, &format!("{start}\n"));
    let sock = netns::bird_socket(&lab.prefix, &b.net, dev);
    let want = model_sessions(&b.st, dev, true).len();
    let started = Instant::now();
    let ready = || {
        let got = bird_sessions(&sock);
        got.len() == want && got.values().all(|(s, _)| s == "Established")
    };
    while !ready() && started.elapsed() < CONVERGE {
        std::thread::sleep(Duration::from_millis(200));
    }
    if !ready() {
        // The comparison after the step will show what is missing.
        eprintln!("differential {case}: {ns}'s BIRD not Ready after {CONVERGE:?}: the rollout moves on");
    }
}

/// Shell lines that stop the BIRD `bird_ns … NAME` started (by its recorded pid file) and
/// wait until it has gone, its pid file with it (`wait_pid` must see the next one's).
fn stop_bird(name: &str) -> String {
    format!(
        "pid=$(cat \"$RUN/{name}.pid\"); kill \"$pid\"; i=0\n\
         while kill -0 \"$pid\" 2>/dev/null; do i=$((i+1)); [ $i -gt 100 ] && {{ echo \"BIRD {name} does not stop\" >&2; exit 1; }}; sleep 0.1; done\n\
         rm -f \"$RUN/{name}.pid\""
    )
}

/// A line of up.sh by what it builds (the kinds `netns::write` writes).
enum Line<'a> {
    /// Comments, blank lines and messages: nothing in the lab.
    Inert,
    Netns(&'a str),
    /// `ip -n NS link add NAME …`; a veth's peer is created in another namespace with it.
    Link {
        ns: &'a str,
        name: &'a str,
        peer: Option<(&'a str, &'a str)>,
    },
    Up {
        ns: &'a str,
        name: &'a str,
    },
    Addr {
        ns: &'a str,
        addr: &'a str,
        dev: &'a str,
    },
    /// `ip -n NS route add ARGS` with the devices its next hops leave through.
    Route {
        ns: &'a str,
        args: &'a str,
        devs: Vec<&'a str>,
    },
    /// `ip netns exec NS sysctl -qw KEY=VALUE…`
    Sysctl {
        ns: &'a str,
        keys: Vec<&'a str>,
    },
    /// `ip netns exec NS nft -f FILE`: the namespace's whole ruleset (felix's table).
    Nft(&'a str),
    /// `bird_ns NS DIR NAME`, by NAME (its pid file and socket).
    Bird(&'a str),
    /// Anything else (FRR, segments' bridge ports): a change this harness does not make.
    Other,
}

fn parse(line: &str) -> Line<'_> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let after = |word: &str| w.iter().position(|x| *x == word).and_then(|i| w.get(i + 1)).copied();
    match w.as_slice() {
        [] => Line::Inert,
        [first, ..] if first.starts_with('#') || *first == "echo" => Line::Inert,
        ["netns", ns] => Line::Netns(ns),
        ["ip", "-n", ns, "link", "add", name, ..] => Line::Link {
            ns,
            name,
            peer: after("netns").zip(after("name")),
        },
        ["ip", "-n", ns, "link", "set", name, "up"] => Line::Up { ns, name },
        ["ip", "-n", ns, "addr", "add", addr, "dev", dev, ..] => Line::Addr { ns, addr, dev },
        ["ip", "-n", ns, "route", "add", ..] => Line::Route {
            ns,
            args: line.split_once(" route add ").map_or("", |(_, a)| a),
            devs: w.windows(2).filter(|p| p[0] == "dev").map(|p| p[1]).collect(),
        },
        ["ip", "netns", "exec", ns, "sysctl", "-qw", keys @ ..] => Line::Sysctl {
            ns,
            keys: keys.iter().map(|k| k.split('=').next().unwrap_or(k)).collect(),
        },
        ["ip", "netns", "exec", ns, "nft", "-f", _] => Line::Nft(ns),
        ["bird_ns", _, _, name] => Line::Bird(name),
        _ => Line::Other,
    }
}

/// What a move from one export's up.sh to the next removes: namespaces and interfaces, with
/// everything in them (the kernel takes their addresses, routes and sysctls along).
#[derive(Default)]
struct Gone<'a> {
    netns: Vec<&'a str>,
    links: Vec<(&'a str, &'a str)>,
}

impl Gone<'_> {
    fn has(&self, ns: &str, dev: &str) -> bool {
        self.netns.contains(&ns) || self.links.contains(&(ns, dev))
    }
}

/// The shell lines that move a running lab from `old` (its up.sh) to `new`: each removed line
/// undone by its inverse, in reverse order, then each added line run, in order. A line that
/// names a file in `reloaded` (changed) is undone and run again. A line kind without an
/// inverse (or that this harness does not add) is an error naming it.
fn shell_changes(old: &str, new: &str, reloaded: &[String]) -> Result<String, String> {
    let reloads = |l: &str| reloaded.iter().any(|f| l.contains(f.as_str()));
    let removed: Vec<&str> = old
        .lines()
        .filter(|l| !new.lines().any(|n| n == *l) || reloads(l))
        .collect();
    let added: Vec<&str> = new
        .lines()
        .filter(|l| !old.lines().any(|o| o == *l) || reloads(l))
        .collect();
    let mut gone = Gone::default();
    for line in &removed {
        match parse(line) {
            Line::Netns(ns) => gone.netns.push(ns),
            Line::Link { ns, name, peer } => {
                gone.links.push((ns, name));
                gone.links.extend(peer);
            }
            _ => {}
        }
    }
    let set_again: Vec<(&str, &str)> = added
        .iter()
        .flat_map(|l| match parse(l) {
            Line::Sysctl { ns, keys } => keys.into_iter().map(|k| (ns, k)).collect(),
            _ => Vec::new(),
        })
        .collect();
    let mut body = String::new();
    for line in removed.iter().rev() {
        if let Some(cmd) = undo(line, &gone, &set_again)? {
            body.push_str(&cmd);
            body.push('\n');
        }
    }
    for line in added {
        match parse(line) {
            Line::Other => return Err(format!("an up.sh line this harness does not add: {line}")),
            Line::Inert => {}
            _ => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    Ok(body)
}

/// The command that undoes one up.sh line, None when nothing needs undoing (what it made
/// goes with a removed namespace or interface, or the new lines set it again).
fn undo(line: &str, gone: &Gone, set_again: &[(&str, &str)]) -> Result<Option<String>, String> {
    Ok(match parse(line) {
        Line::Inert => None,
        Line::Netns(ns) => Some(format!("ip netns del {ns}")),
        Line::Link { ns, .. } | Line::Nft(ns) if gone.netns.contains(&ns) => None,
        Line::Link { ns, name, .. } => Some(format!("ip -n {ns} link del {name}")),
        Line::Up { ns, name } if !gone.has(ns, name) => Some(format!("ip -n {ns} link set {name} down")),
        Line::Addr { ns, addr, dev } if !gone.has(ns, dev) => Some(format!("ip -n {ns} addr del {addr} dev {dev}")),
        Line::Route { ns, args, devs } if !devs.iter().any(|d| gone.has(ns, d)) => {
            Some(format!("ip -n {ns} route del {args}"))
        }
        Line::Up { .. } | Line::Addr { .. } | Line::Route { .. } => None,
        Line::Sysctl { ns, keys } => {
            let gone_with_link = |k: &str| {
                gone.links
                    .iter()
                    .any(|(n, d)| *n == ns && k.contains(&format!(".conf.{d}.")))
            };
            let unset: Vec<&str> = keys
                .into_iter()
                .filter(|k| !gone.netns.contains(&ns) && !gone_with_link(k) && !set_again.contains(&(ns, *k)))
                .collect();
            if !unset.is_empty() {
                return Err(format!(
                    "a sysctl no longer set, with no inverse here: {unset:?} ({line})"
                ));
            }
            None
        }
        Line::Nft(ns) => Some(format!("ip netns exec {ns} nft flush ruleset")),
        Line::Bird(name) => Some(stop_bird(name)),
        Line::Other => return Err(format!("an up.sh line this harness cannot undo: {line}")),
    })
}

/// A generated 2x4x2 fabric (one pod per node, no encapsulation), converged.
fn generated(underlay: &str, calico: &str) {
    let case = format!("gen-2x4x2-{underlay}-{calico}");
    if !can_run(&case) {
        return;
    }
    let file = std::env::temp_dir().join(format!("fabsim-differential-{}-{case}.yaml", std::process::id()));
    let out = common::fabsim(&[
        "gen",
        "leaf-spine",
        "--spines",
        "2",
        "--leaves",
        "4",
        "--nodes-per-leaf",
        "2",
        "--pods-per-node",
        "1",
        "--underlay",
        underlay,
        "--calico",
        calico,
        "--encap",
        "none",
        "--out",
        file.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let opened = scenario::open(&file).unwrap_or_else(|e| panic!("{e}"));
    let run = scenario::run(&opened, None).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(&file);
    compare(&case, &run);
}

#[test]
fn gen_ospf_tor() {
    generated("ospf", "tor");
}

#[test]
fn gen_ospf_mesh() {
    generated("ospf", "mesh");
}

#[test]
fn gen_ospf_rr() {
    generated("ospf", "rr");
}

#[test]
fn gen_ebgp_tor() {
    generated("ebgp", "tor");
}

#[test]
fn gen_ebgp_mesh() {
    generated("ebgp", "mesh");
}

#[test]
fn gen_ebgp_rr() {
    generated("ebgp", "rr");
}

/// The seed lab built at s4 (from scratch) and reached from there through s5 and the runbook's
/// steps to s6 (two calico-node rollouts, a pool change, the mesh switched off, a new pod):
/// compared at s4, s5 and s6. One lab for the three, as the suite has 5 minutes on 2 cores.
#[test]
fn seed_s6() {
    seed_through(&["s4", "s5", "s6"]);
}

/// A step's up.sh difference: a pod's namespace, veth and route added; a changed felix route
/// replaced; a removed pod's veth deleted with what was on it left to the kernel; felix's
/// nftables table flushed; FRR's lines refused. Needs no root: only the shell text.
#[test]
fn shell_changes_undo_removed_lines_and_run_added_ones() {
    let old = "netns p-n\nip -n p-n link add caliA type veth peer name eth0 netns p-a\n\
               ip -n p-a addr add 10.66.1.2/32 dev eth0\nip netns exec p-n sysctl -qw net.ipv4.conf.caliA.proxy_arp=1\n\
               ip -n p-n link set caliA up\nip -n p-n route add 10.66.1.2 dev caliA scope link\n\
               ip -n p-n route add blackhole 10.66.1.0/24 proto 80\nip netns exec p-n nft -f \"$LAB/n/nat-outgoing.nft\"\n";
    let new = "netns p-n\nnetns p-b\nip -n p-n link add caliB type veth peer name eth0 netns p-b\n\
               ip -n p-n route add blackhole 10.66.2.0/24 proto 80\n";
    let body = shell_changes(old, new, &[]).expect("every line kind is handled");
    assert_eq!(
        body,
        "ip netns exec p-n nft flush ruleset\nip -n p-n route del blackhole 10.66.1.0/24 proto 80\n\
         ip -n p-n link del caliA\nnetns p-b\nip -n p-n link add caliB type veth peer name eth0 netns p-b\n\
         ip -n p-n route add blackhole 10.66.2.0/24 proto 80\n"
    );
    let frr = shell_changes("frr p-l \"$LAB/l\" zebra\n", "", &[]);
    assert!(frr.is_err_and(|e| e.contains("cannot undo: frr")));
}

// ---------------------------------------------------------------------------------------------
// FRR configurations as input (issue #12): Linux hosts that run FRR on the user's own
// frr.conf. fabsim reads the file with the FRR profile; the lab runs real FRR 8.4 on the same
// file, so the comparison is of the profile, not of an export.

/// The FRR configuration each Linux host of tests/data/frr/prepend.clab.yml binds (its
/// `NAME.conf`), by device name.
fn prepend_confs() -> Vec<(&'static str, PathBuf)> {
    ["spine1", "spine2", "leaf-a", "leaf-b"]
        .into_iter()
        .map(|d| (d, PathBuf::from(format!("tests/data/frr/{d}.conf"))))
        .collect()
}

/// `build`, plus real FRR in each listed host's namespace on that host's own configuration
/// (each daemon on its blocks, `frr::daemon_conf`), started by the lab's own `frr` function
/// so that `down.sh` stops it.
fn build_with_host_frr(case: &str, net: &Network, st: &State, confs: &[(&str, PathBuf)]) -> Lab {
    let prefix = format!("fsd{}{}", std::process::id() % 100_000, case_tag(case));
    let dir = std::env::temp_dir().join(format!("fabsim-differential-{prefix}"));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = lab_options(&prefix);
    let mut lab_files = export::export(net, st, Target::Netns, &opts);
    let mut starts = String::new();
    for (name, path) in confs {
        let id = net
            .device_by_name(name)
            .unwrap_or_else(|| panic!("{name} is in the fabric"));
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let daemons = export::frr::daemons(net.device(id));
        let sub = format!("host-frr/{name}");
        for daemon in &daemons {
            lab_files.files.push(export::LabFile {
                path: PathBuf::from(format!("{sub}/{daemon}.conf")),
                text: export::frr::daemon_conf(&text, daemon),
                executable: false,
            });
        }
        let ns = netns_name(&prefix, net, id);
        starts.push_str(&format!("frr {ns} \"$LAB/{sub}\" {}\n", daemons.join(" ")));
    }
    let up = lab_files
        .files
        .iter_mut()
        .find(|f| f.path == Path::new("up.sh"))
        .expect("the netns export writes up.sh");
    let last = up
        .text
        .rfind("echo \"fabsim lab")
        .expect("up.sh ends by saying the lab is up");
    up.text.insert_str(last, &starts);
    lab_files.write(&dir).expect("write the lab");
    let lab = Lab { dir, prefix };
    let out = Command::new("sh")
        .arg(lab.dir.join("up.sh"))
        .output()
        .expect("run up.sh");
    assert!(
        out.status.success(),
        "up.sh failed for {case}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    lab
}

/// `differences` plus the BGP sessions of the FRR hosts (which `differences` reads only on
/// switches and BIRD hosts).
fn host_frr_differences(net: &Network, st: &State, lab: &Lab, confs: &[(&str, PathBuf)]) -> Vec<String> {
    let mut diffs = differences(net, st, lab, false);
    for (name, _) in confs {
        let Some(id) = net.device_by_name(name) else { continue };
        let ns = netns_name(&lab.prefix, net, id);
        let (want, got) = (model_sessions(st, id, false), frr_sessions(&ns));
        if want != got {
            diffs.push(format!(
                "{name}: BGP sessions (state, received): fabsim {want:?}, lab {got:?}"
            ));
        }
    }
    diffs
}

/// leaf-b prepends its AS twice towards spine2 (route-map TO-SPINE2): leaf-a must keep only
/// the path through spine1 for the rack, in fabsim and in real FRR alike; without the prepend
/// both spines' paths would be equal and FRR would install both (ECMP).
#[test]
fn frr_prepend_changes_best_paths_as_frr_does() {
    let case = "frr-prepend";
    if !can_run(case) {
        return;
    }
    let opened = scenario::open(Path::new("tests/data/frr/prepend.clab.yml")).unwrap_or_else(|e| panic!("{e}"));
    let run = scenario::run(&opened, None).unwrap_or_else(|e| panic!("{e}"));
    let (net, st) = (run.engine.network(), run.engine.state());
    let leaf_a = net.device_by_name("leaf-a").expect("leaf-a");
    let rack = model_routes(net, st, leaf_a).remove("10.20.2.0/24");
    assert_eq!(
        rack,
        Some(("bgp", vec!["10.2.1.0@eth1".to_string()])),
        "fabsim: leaf-a reaches the rack through spine1 only"
    );
    let confs = prepend_confs();
    let _one = ONE_LAB.lock().unwrap_or_else(|e| e.into_inner());
    let lab = build_with_host_frr(case, net, st, &confs);
    let started = Instant::now();
    let mut diffs = host_frr_differences(net, st, &lab, &confs);
    while !diffs.is_empty() && started.elapsed() < CONVERGE {
        std::thread::sleep(Duration::from_secs(2));
        diffs = host_frr_differences(net, st, &lab, &confs);
    }
    eprintln!(
        "differential {case}: compared after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        diffs.is_empty(),
        "differential {case}: {} differences between fabsim and real FRR 8.4:\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    );
}
