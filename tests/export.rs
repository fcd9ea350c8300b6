//! `fabsim export`: the files each target writes, read back against the model they came from
//! (no root needed; `tests/differential.rs` runs them against real daemons).

mod common;

use std::path::Path;
use std::process::Command;

use fabsim::export::{self, kernel_ifname, Options, Switches, Target};
use fabsim::model::DeviceKind;
use fabsim::scenario::{self, Run};
use fabsim::views;

fn gen_fabric() -> Run {
    let opened = scenario::open(Path::new("topologies/gen-2x4x2.yaml")).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, None).unwrap_or_else(|e| panic!("{e}"))
}

fn opts() -> Options {
    Options {
        prefix: "fstest".into(),
        fast_timers: false,
        switches: Switches::Frr,
    }
}

fn file<'a>(lab: &'a export::Lab, path: &str) -> &'a str {
    lab.files
        .iter()
        .find(|f| f.path == Path::new(path))
        .map(|f| f.text.as_str())
        .unwrap_or_else(|| panic!("no {path} in the export"))
}

#[test]
fn frr_conf_carries_the_eos_semantics_of_every_switch() {
    let run = gen_fabric();
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Frr, &opts());
    let mut switches = 0;
    for dev in net.devices.iter().filter(|d| d.kind == DeviceKind::Eos) {
        switches += 1;
        let conf = file(&lab, &format!("{}/frr.conf", dev.name));
        assert!(conf.contains("EOS behaviours FRR 8.4 only approximates"), "{conf}");
        for &i in &dev.ifaces {
            let name = kernel_ifname(net, i);
            let block = format!("interface {name}\n ip ospf cost 10\n");
            assert!(conf.contains(&block), "{}: no `{block}` in\n{conf}", dev.name);
        }
        let ospf = dev.ospf.as_ref().expect("generated switches run OSPF");
        for n in &ospf.networks {
            assert!(
                conf.contains(&format!(" network {} area 0.0.0.0\n", n.prefix)),
                "{conf}"
            );
        }
        if let Some(bgp) = &dev.bgp {
            assert!(conf.contains(&format!("router bgp {}\n", bgp.asn)), "{conf}");
            for line in [
                " no bgp ebgp-requires-policy\n",
                "  distance bgp 200 200 200\n",
                "  maximum-paths 1\n",
            ] {
                assert!(conf.contains(line), "{}: no `{line}`", dev.name);
            }
            for n in &bgp.neighbors {
                let line = format!(" neighbor {} remote-as {}\n", n.address, n.remote_as.unwrap());
                assert!(conf.contains(&line), "{}: no `{line}`", dev.name);
            }
            // The router id fabsim computed, so that tie-breaks can agree.
            let rid = st.devices[net.device_by_name(&dev.name).unwrap().idx()]
                .bgp
                .as_ref()
                .unwrap()
                .router_id
                .unwrap();
            assert!(conf.contains(&format!(" bgp router-id {rid}\n")), "{conf}");
        }
        // Leaves redistribute BGP into OSPF with EOS's E2 metrics, not FRR's 20.
        if ospf.redistribute.iter().any(|r| r.metric.is_none()) {
            assert!(
                conf.contains(" set metric 10\n") && conf.contains(" set metric 1\n"),
                "{conf}"
            );
        }
    }
    assert_eq!(switches, 6);
}

#[test]
fn bird_export_is_what_confd_rendered() {
    let run = gen_fabric();
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Bird, &opts());
    let dev = net.device_by_name("node-2-1").unwrap();
    for name in ["bird.cfg", "bird_aggr.cfg", "bird_ipam.cfg"] {
        let shown = views::run_command(net, st, dev, &format!("cat /etc/calico/confd/config/{name}")).unwrap();
        assert_eq!(file(&lab, &format!("node-2-1/{name}")), shown, "{name}");
    }
}

#[test]
fn export_is_byte_identical_across_runs() {
    let (a, b) = (gen_fabric(), gen_fabric());
    for target in [Target::Frr, Target::Bird, Target::Netns, Target::Containerlab] {
        let la = export::export(a.engine.network(), a.engine.state(), target, &opts());
        let lb = export::export(b.engine.network(), b.engine.state(), target, &opts());
        assert_eq!(la.files, lb.files, "{target:?}");
    }
}

#[test]
fn netns_scripts_are_valid_shell_and_stay_inside_their_prefix() {
    let run = gen_fabric();
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Netns, &opts());
    let dir = std::env::temp_dir().join(format!("fabsim-export-test-{}", std::process::id()));
    lab.write(&dir).unwrap();
    for script in ["up.sh", "down.sh"] {
        let ok = Command::new("sh").arg("-n").arg(dir.join(script)).status().unwrap();
        assert!(ok.success(), "{script} is not valid sh");
    }
    let up = file(&lab, "up.sh");
    // Every namespace, link and address command names a namespace of this lab.
    for line in up.lines() {
        if let Some(rest) = line.strip_prefix("ip -n ") {
            assert!(rest.starts_with("fstest-"), "{line}");
        }
        if let Some(rest) = line.strip_prefix("netns ") {
            assert!(rest.starts_with("fstest-"), "{line}");
        }
    }
    // One namespace per device, one veth pair per link (every link here is point to point).
    assert_eq!(
        up.lines().filter(|l| l.starts_with("netns ")).count(),
        net.devices.len()
    );
    assert_eq!(up.matches(" type veth peer name ").count(), net.l2.len());
    // Pods: proxy ARP on the node's cali veth, the 169.254.1.1 gateway in the pod.
    assert!(up.contains("net.ipv4.conf.cali"), "no proxy ARP");
    assert!(up.contains("route add 169.254.1.1/32 dev eth0 scope link"), "{up}");
    assert!(up.contains("route add 0.0.0.0/0 via 169.254.1.1 dev eth0"), "{up}");
    let down = file(&lab, "down.sh");
    assert!(down.contains("/run/fabsim/fstest/created"), "{down}");
    assert!(!down.contains("pkill") && !down.contains("killall"), "{down}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn containerlab_has_every_link_with_its_interface_names() {
    let run = gen_fabric();
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Containerlab, &opts());
    let clab = file(&lab, "lab.clab.yml");
    for l2 in &net.l2 {
        let ends: Vec<String> = l2
            .members
            .iter()
            .map(|m| format!("{}:{}", net.device(net.iface(*m).device).name, kernel_ifname(net, *m)))
            .collect();
        assert!(
            clab.contains(&format!("[\"{}\", \"{}\"]", ends[0], ends[1])),
            "{ends:?}"
        );
    }
    assert!(clab.contains("image: quay.io/frrouting/frr:8.4.4"));
    file(&lab, "leaf-1/frr.conf");
    file(&lab, "leaf-1/daemons");
    file(&lab, "node-1-1/bird.cfg");
}

#[test]
fn stock_bird_accepts_the_exported_calico_configs() {
    if !Command::new("sh")
        .args(["-c", "command -v bird"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIP: no bird on this machine");
        return;
    }
    // The seed lab at s1 tunnels over IPIP: its confd filters set krt_tunnel = "tunl0".
    let run = common::run_to("s4");
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Netns, &opts());
    let dir = std::env::temp_dir().join(format!("fabsim-export-bird-{}", std::process::id()));
    lab.write(&dir).unwrap();
    let mut checked = 0;
    for f in lab.files.iter().filter(|f| f.path.ends_with("bird.cfg")) {
        assert!(!f.text.contains("krt_tunnel ="), "{}", f.path.display());
        let host_dir = dir.join(f.path.parent().unwrap());
        let out = Command::new("bird")
            .args(["-p", "-c", "bird.cfg"])
            .current_dir(&host_dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} BIRD configs");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cli_export_names_the_ipip_limit_and_rejects_a_bad_prefix() {
    let dir = std::env::temp_dir().join(format!("fabsim-export-cli-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let out = common::fabsim(&[
        "export",
        "scenarios/seed-lab.yaml",
        "--step",
        "s1",
        "--to",
        "netns",
        "--out",
        d,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("IPIP"), "{stderr}");
    let up = std::fs::read_to_string(dir.join("up.sh")).unwrap();
    assert!(up.contains("# LIMIT: IPIP"), "the script says it cannot build IPIP");
    let bad = common::fabsim(&[
        "export",
        "topologies/gen-2x4x2.yaml",
        "--to",
        "frr",
        "--out",
        d,
        "--prefix",
        "a b",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--prefix"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_daemon_gets_the_exit_lines_of_its_own_blocks_only() {
    let conf = "frr version 8.4\ninterface eth1\n ip address 10.0.0.1/31\nexit\nrouter bgp 65001\n neighbor 10.0.0.0 remote-as 65000\nexit\n";
    assert_eq!(
        fabsim::export::frr::daemon_conf(conf, "bgpd"),
        "frr version 8.4\nrouter bgp 65001\n neighbor 10.0.0.0 remote-as 65000\nexit\n"
    );
    assert_eq!(
        fabsim::export::frr::daemon_conf(conf, "zebra"),
        "frr version 8.4\ninterface eth1\n ip address 10.0.0.1/31\nexit\n"
    );
}

/// felix's natOutgoing in the netns lab: each Calico node's namespace gets the model's
/// MASQUERADE (`model::Masquerade`) as an nftables table, loaded by `up.sh`; at s6 the pool's
/// natOutgoing is off and no node gets one.
#[test]
fn netns_lab_masquerades_where_felix_does() {
    let run = common::run_to("s4");
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Netns, &opts());
    let up = file(&lab, "up.sh");
    let dir = std::env::temp_dir().join(format!("fabsim-export-nft-{}", std::process::id()));
    lab.write(&dir).unwrap();
    let nft = Command::new("sh")
        .args(["-c", "command -v nft"])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut nodes = 0;
    for d in net.devices.iter() {
        let Some(m) = &d.masquerade else { continue };
        nodes += 1;
        let path = format!("{}/nat-outgoing.nft", export::file_name(&d.name));
        let text = file(&lab, &path);
        assert!(
            up.contains(&format!("ip netns exec fstest-{} nft -f \"$LAB/{path}\"", d.name)),
            "{up}"
        );
        let pools = |nets: &[ipnet::Ipv4Net]| nets.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ");
        assert!(text.contains(&format!("elements = {{ {} }}", pools(&m.src))), "{text}");
        assert!(
            text.contains(&format!("elements = {{ {} }}", pools(&m.not_dst))),
            "{text}"
        );
        assert!(
            text.contains("ip saddr @cali40masq-ipam-pools ip daddr != @cali40all-ipam-pools masquerade"),
            "{text}"
        );
        assert!(text.contains("type nat hook postrouting priority srcnat"), "{text}");
        if nft {
            // `-c`: parse and check against the kernel without loading anything.
            let out = Command::new("nft")
                .arg("-c")
                .arg("-f")
                .arg(dir.join(&path))
                .output()
                .unwrap();
            assert!(out.status.success(), "{path}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    assert_eq!(nodes, 4, "every Calico node masquerades at s4");
    let _ = std::fs::remove_dir_all(&dir);

    let run = common::run_to("s6");
    let (net, st) = (run.engine.network(), run.engine.state());
    let lab = export::export(net, st, Target::Netns, &opts());
    assert!(!lab.files.iter().any(|f| f.path.ends_with("nat-outgoing.nft")));
    assert!(!file(&lab, "up.sh").contains(" nft "));
}

/// A pod that is deleted or runs elsewhere loses its veth (the CNI's DEL): at s4 test-pod
/// runs on k-w2 (s2) after its s1 run on k-w3, so k-w3 no longer lists its `cali7fba7a35b74`,
/// and the lab builds the pod's eth0 once, towards k-w2.
#[test]
fn a_gone_pods_veth_is_deleted_and_built_nowhere() {
    let run = common::run_to("s4");
    let (net, st) = (run.engine.network(), run.engine.state());
    let veth = "cali7fba7a35b74";
    let w3 = net.device_by_name("k-w3").unwrap();
    let w2 = net.device_by_name("k-w2").unwrap();
    assert_eq!(net.iface_by_name(w3, veth), None);
    assert!(net.iface_by_name(w2, veth).is_some());
    assert!(!common::out_in(&run, "k-w3", "ip link").contains(veth));
    assert!(common::out_in(&run, "k-w2", "ip link").contains(veth));
    // The kernel never gives a new interface a deleted one's index: k-w2's pods came and went
    // (s2-pre to s2-broken), and every interface it ever had keeps an index of its own.
    let mut indexes: Vec<u32> = net
        .interfaces
        .iter()
        .filter(|i| i.device == w2)
        .map(|i| i.ifindex)
        .collect();
    let ever = indexes.len();
    indexes.sort_unstable();
    indexes.dedup();
    assert_eq!(indexes.len(), ever, "k-w2 reused an ifindex");
    assert!(ever > net.device(w2).ifaces.len(), "k-w2 deleted no veth");
    let up = export::export(net, st, Target::Netns, &opts())
        .files
        .into_iter()
        .find(|f| f.path == Path::new("up.sh"))
        .unwrap()
        .text;
    let test_pod = up
        .lines()
        .filter(|l| l.starts_with("ip -n fstest-test-pod link add eth0 "))
        .collect::<Vec<_>>();
    assert_eq!(
        test_pod,
        [format!(
            "ip -n fstest-test-pod link add eth0 type veth peer name {veth} netns fstest-k-w2"
        )]
    );
}

/// A real tool the export checks run when it is installed: `None` (skip, said once) without
/// it, unless `env` is `required` (CI), which makes a missing tool a failure.
fn real_tool(name: &str, env: &str) -> Option<String> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(name.to_string());
    }
    assert!(
        std::env::var(env).as_deref() != Ok("required"),
        "{env}=required but `{name}` is not installed"
    );
    eprintln!("SKIP the {name} checks: `{name}` is not installed (set {env}=required to fail instead)");
    None
}

/// The real daemons' own configuration checks: `bird -p` (parse and exit) and FRR's
/// `vtysh -C` (dry run of the integrated config through vtysh's grammar, no daemon needed).
/// A configuration already accepted is not checked again: most steps change few files.
struct RealCheckers {
    bird: Option<String>,
    vtysh: Option<String>,
    accepted: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl RealCheckers {
    fn find() -> RealCheckers {
        RealCheckers {
            bird: real_tool("bird", "FABSIM_BIRD"),
            vtysh: real_tool("vtysh", "FABSIM_DIFFERENTIAL"),
            accepted: Default::default(),
        }
    }

    /// Whether `files` (a configuration and what it includes) still need a check by `tool`.
    fn is_new(&self, tool: &str, files: &[&str]) -> bool {
        self.accepted
            .borrow_mut()
            .insert(format!("{tool}\0{}", files.join("\0")))
    }
}

/// Runs `program args` in `dir` and fails with its output when it refuses.
fn accepts(label: &str, dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program).args(args).current_dir(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{label}: `{program} {}` in {} refused it:\n{}{}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The network at one moment exported to every target, each written out and checked by what
/// would consume it: the netns scripts by `sh -n`, every BIRD configuration the lab starts by
/// stock BIRD 1.6's parser, every `frr.conf` by FRR's vtysh, the containerlab topology and the
/// snapshot directory read back by fabsim itself with the same devices.
fn exports_everywhere(label: &str, net: &fabsim::model::Network, st: &fabsim::engine::State, real: &RealCheckers) {
    // Tests run in parallel: each export gets a directory of its own.
    static EXPORTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = EXPORTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = common::scratch(&format!("export-everywhere-{}-{n}", std::process::id()));
    // Pods' network namespaces are the cluster's to make again when a dump is read back.
    let pods = net.pod_devices();
    let hosts_and_switches: Vec<&str> = (0..net.devices.len())
        .map(|i| fabsim::model::DeviceId(i as u32))
        .filter(|id| !pods.contains(id))
        .map(|id| net.device(id).name.as_str())
        .collect();
    for target in [
        Target::Frr,
        Target::Bird,
        Target::Netns,
        Target::Containerlab,
        Target::Snapshot,
    ] {
        let lab = export::export(net, st, target, &opts());
        let out = dir.join(format!("{target:?}"));
        lab.write(&out)
            .unwrap_or_else(|e| panic!("{label} {target:?}: cannot write: {e}"));
        let paths: std::collections::BTreeSet<&Path> = lab.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(paths.len(), lab.files.len(), "{label} {target:?}: a path written twice");
        for p in &paths {
            assert!(
                p.is_relative() && !p.components().any(|c| c == std::path::Component::ParentDir),
                "{label} {target:?}: {} leaves the lab directory",
                p.display()
            );
        }
        match target {
            Target::Frr => {
                let confs: Vec<&Path> = paths.iter().copied().filter(|p| p.ends_with("frr.conf")).collect();
                let switches = net.devices.iter().filter(|d| d.kind == DeviceKind::Eos).count();
                assert_eq!(confs.len(), switches, "{label}: one frr.conf per EOS switch");
                if let Some(vtysh) = &real.vtysh {
                    for conf in confs {
                        if real.is_new(vtysh, &[file(&lab, conf.to_str().unwrap())]) {
                            let conf = out.join(conf);
                            accepts(label, &out, vtysh, &["-C", "-f", conf.to_str().unwrap()]);
                        }
                    }
                }
            }
            Target::Bird => {
                // Every file of every BIRD the model runs, under its host's directory.
                for dev in &net.devices {
                    for (name, _) in dev.bird.iter().flat_map(|b| &b.files) {
                        let path = format!("{}/{name}", export::file_name(&dev.name));
                        assert!(paths.contains(Path::new(&path)), "{label}: no {path}");
                    }
                }
            }
            Target::Netns => {
                for script in ["up.sh", "down.sh"] {
                    accepts(label, &out, "sh", &["-n", script]);
                }
                if let Some(bird) = &real.bird {
                    for cfg in paths.iter().filter(|p| p.ends_with("bird.cfg")) {
                        // bird.cfg with the files beside it that it includes.
                        let dir = cfg.parent().unwrap();
                        let texts: Vec<&str> = lab
                            .files
                            .iter()
                            .filter(|f| f.path.parent() == Some(dir))
                            .map(|f| f.text.as_str())
                            .collect();
                        if real.is_new(bird, &texts) {
                            accepts(label, &out.join(dir), bird, &["-p", "-c", "bird.cfg"]);
                        }
                    }
                }
            }
            Target::Containerlab | Target::Snapshot => {
                let input = if target == Target::Snapshot {
                    out.clone()
                } else {
                    out.join("lab.clab.yml")
                };
                let back = scenario::open(&input)
                    .unwrap_or_else(|e| panic!("{label}: fabsim cannot read its own {target:?} export back:\n{e}"));
                for name in &hosts_and_switches {
                    assert!(
                        back.net.device_by_name(name).is_some(),
                        "{label}: {name} is missing from the {target:?} export read back"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bundled scenarios, each exported after every step by a test of its own (they run in
/// parallel); `every_bundled_scenario_has_its_export_test` keeps the list whole.
const SCENARIOS: [&str; 11] = [
    "scenarios/seed-lab-bgp.yaml",
    "scenarios/seed-lab-cold-s5.yaml",
    "scenarios/seed-lab-cold-s6.yaml",
    "scenarios/seed-lab-no-outage.yaml",
    "scenarios/seed-lab.yaml",
    "scenarios/seed000-cilium.yaml",
    "scenarios/seed000-expand-pod-cidr.yaml",
    "scenarios/seed000-mask-only.yaml",
    "scenarios/seed000-rollback.yaml",
    "scenarios/seed001-flannel.yaml",
    "scenarios/seed001-pod-and-service-cidr.yaml",
];

/// Issue #6: `fabsim export` works for every bundled scenario step — the network after each
/// step of `file`, as the runbook left it. Returns how many steps were exported.
fn every_step_exports(file: &str) -> usize {
    let real = RealCheckers::find();
    let opened = scenario::open(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
    let mut steps = 0;
    let mut at_step =
        |step: &scenario::StepReport, engine: &fabsim::engine::Engine, _: Option<&scenario::ReachMatrix>| {
            exports_everywhere(
                &format!("{file} after {}", step.id),
                engine.network(),
                engine.state(),
                &real,
            );
            steps += 1;
        };
    scenario::run_watched(&opened, None, fabsim::engine::DEFAULT_SEED, &mut at_step).unwrap_or_else(|e| panic!("{e}"));
    steps
}

#[test]
fn every_bundled_scenario_has_its_export_test() {
    let mut files: Vec<String> = std::fs::read_dir("scenarios")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert_eq!(files, SCENARIOS, "a scenario without an export test below");
}

#[test]
fn seed_lab_bgp_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[0]) >= 10);
}

#[test]
fn seed_lab_cold_s5_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[1]) >= 20);
}

#[test]
fn seed_lab_cold_s6_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[2]) >= 20);
}

#[test]
fn seed_lab_no_outage_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[3]) >= 20);
}

#[test]
fn seed_lab_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[4]) >= 20);
}

#[test]
fn seed000_cilium_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[5]) >= 10);
}

#[test]
fn seed000_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[6]) >= 10);
}

#[test]
fn seed000_mask_only_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[7]) >= 5);
}

#[test]
fn seed000_rollback_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[8]) >= 5);
}

#[test]
fn seed001_flannel_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[9]) >= 10);
}

#[test]
fn seed001_exports_after_every_step() {
    assert!(every_step_exports(SCENARIOS[10]) >= 10);
}

/// Issue #6: `fabsim export` works for every bundled topology and for generated fabrics in every
/// underlay, Calico peering mode and encapsulation.
#[test]
fn every_bundled_topology_and_generated_fabric_exports_to_every_target() {
    let real = RealCheckers::find();
    let mut inputs: Vec<_> = std::fs::read_dir("topologies")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    inputs.sort();
    inputs.push("topologies/rfc7938/rfc7938.clab.yml".into());
    for input in &inputs {
        let opened = scenario::open(input).unwrap_or_else(|e| panic!("{e}"));
        let run = scenario::run(&opened, None).unwrap_or_else(|e| panic!("{e}"));
        exports_everywhere(
            &input.display().to_string(),
            run.engine.network(),
            run.engine.state(),
            &real,
        );
    }
    use fabsim::gen::{CalicoMode, Encap, LeafSpine, Underlay};
    let dir = common::scratch(&format!("export-generated-{}", std::process::id()));
    let mut fabrics = 0;
    for underlay in [Underlay::Ospf, Underlay::Ebgp] {
        for calico in [CalicoMode::Tor, CalicoMode::Mesh, CalicoMode::Rr] {
            for encap in [Encap::None, Encap::Ipip, Encap::IpipCrosssubnet, Encap::Vxlan] {
                let mut plan = LeafSpine::new(2, 4, 2);
                plan.pods_per_node = 1;
                plan.underlay = underlay;
                plan.calico = calico;
                plan.encap = encap;
                let label = format!("gen 2x4x2 {underlay:?} {calico:?} {encap:?}");
                if let Err(why) = plan.check() {
                    eprintln!("{label}: not a fabric gen makes ({why})");
                    continue;
                }
                let file = dir.join("fabric.yaml");
                std::fs::write(&file, plan.generate()).unwrap();
                let opened = scenario::open(&file).unwrap_or_else(|e| panic!("{label}: {e}"));
                let run = scenario::run(&opened, None).unwrap_or_else(|e| panic!("{label}: {e}"));
                exports_everywhere(&label, run.engine.network(), run.engine.state(), &real);
                fabrics += 1;
            }
        }
    }
    assert!(fabrics >= 20, "only {fabrics} generated fabrics");
    let _ = std::fs::remove_dir_all(&dir);
}
