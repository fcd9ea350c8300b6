//! A step's impact: BGP sessions that went down or up (with the speaker's reason), the
//! reachability matrix between every host and pod (pairs broken with their decision chain,
//! pairs healed), and forwarding loops / blackholes as findings. On a two-router fabric built
//! to loop and blackhole, and on the bundled seed lab.

mod common;

use common::{fabsim, run_to};
use serde_json::Value;

const IMPACT: &str = "tests/data/impact/scenario.yaml";

fn json(args: &[&str]) -> Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let o = fabsim(&all);
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

fn step<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default()
}

fn pair<'a>(list: &'a Value, from: &str, to: &str) -> &'a Value {
    list.as_array()
        .expect("pairs")
        .iter()
        .find(|p| p["from"] == from && p["to"] == to)
        .unwrap_or_else(|| panic!("no pair {from} -> {to} in {list:#}"))
}

fn reach(s: &fabsim::scenario::StepReport) -> &fabsim::scenario::ReachDelta {
    s.reach.as_ref().expect("a scenario step has a matrix")
}

#[test]
fn a_loop_breaks_pairs_with_its_chain_and_is_a_finding() {
    let doc = json(&[IMPACT]);
    assert_eq!(doc["start"]["reach"]["reachable"], 6);
    assert_eq!(doc["start"]["reach"]["pairs"], 6);
    let s = step(&doc, "loop");
    assert!(
        strings(&s["findings"]).contains(&"forwarding loop R1 -> R2 -> R1 (towards 10.3.0.1)".to_string()),
        "{:#}",
        s["findings"]
    );
    assert_eq!(s["reach"]["reachable"], 2);
    assert_eq!(s["reach"]["broke"].as_array().map(Vec::len), Some(4));
    let hm = pair(&s["reach"]["broke"], "h", "m");
    assert_eq!(hm["addr"], "10.3.0.1");
    assert_eq!(
        hm["result"],
        "From 10.0.0.1 Time to live exceeded (forwarding loop: R1 -> R2 -> R1)"
    );
    let why = strings(&hm["why"]);
    assert_eq!(
        why[..3],
        [
            "1. h: 10.3.0.1 matches 0.0.0.0/0 (static) via 10.1.0.0, out eth0",
            "2. R1 in Ethernet2: 10.3.0.1 matches 10.3.0.0/31 (static) via 10.0.0.1, out Ethernet1",
            "3. R2 in Ethernet1: 10.3.0.1 matches 10.3.0.0/16 (static) via 10.0.0.0, out Ethernet1",
        ]
    );
    // The loop is shown once round, not 64 times.
    assert!(why.len() < 8, "{why:#?}");
    assert!(why.iter().any(|l| l.contains("circles the same hops")), "{why:#?}");
    assert!(why
        .last()
        .is_some_and(|l| l.ends_with("the TTL expired → ICMP time exceeded from 10.0.0.1")));
    // m lost its link: its own pings cannot leave.
    assert_eq!(
        pair(&s["reach"]["broke"], "m", "h")["result"],
        "connect: Network is unreachable"
    );
}

#[test]
fn a_blackhole_is_one_finding_naming_its_victims_and_healing_is_reported() {
    let doc = json(&[IMPACT]);
    let s = step(&doc, "blackhole");
    assert_eq!(
        strings(&s["findings"]),
        ["blackhole: R1 drops packets to 10.3.0.1 by 10.3.0.0/31 (from h, k)"]
    );
    // Still broken, but no pair changed verdict: nothing broke or healed.
    assert_eq!(s["reach"]["broke"].as_array().map(Vec::len), Some(0));
    assert_eq!(s["reach"]["healed"].as_array().map(Vec::len), Some(0));
    let last = step(&doc, "heal-r2");
    assert_eq!(last["reach"]["reachable"], 6);
    assert_eq!(last["reach"]["healed"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        pair(&last["reach"]["healed"], "h", "m")["result"],
        "reply from 10.3.0.1 ttl=62"
    );
    assert!(strings(&last["findings"]).is_empty(), "{:#}", last["findings"]);
}

#[test]
fn the_text_report_lists_broken_pairs_with_their_chain() {
    let o = fabsim(&["run", IMPACT]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    for line in [
        "  reachability: 6 of 6 host/pod pairs answer, no pair changed",
        "  reachability: 2 of 6 host/pod pairs answer; 4 broke, 0 healed",
        "    broke  h -> m (10.3.0.1): From 10.0.0.1 Time to live exceeded (forwarding loop: R1 -> R2 -> R1)",
        "             5–64. the packet circles the same hops again until its TTL runs out",
        "  FINDING blackhole: R1 drops packets to 10.3.0.1 by 10.3.0.0/31 (from h, k)",
        "    healed m -> k (10.2.0.5): reply from 10.2.0.5 ttl=62",
    ] {
        assert!(text.lines().any(|l| l == line), "no line `{line}` in:\n{text}");
    }
}

/// seed-lab.md s3a: once k-master's Node moves to its ens3 address, the workers route
/// 10.66.111.0/24 to their leaves, which have no BGP yet — the issue's own example chain.
#[test]
fn seed_lab_s3a_breaks_the_workers_path_to_k_masters_block_at_their_leaf() {
    let run = run_to("s3a");
    let s = run.steps.last().expect("s3a");
    let broke: Vec<&fabsim::scenario::PairChange> = reach(s).broke.iter().filter(|p| p.from == "k-w2").collect();
    let [p] = broke.as_slice() else {
        panic!("k-w2 should lose exactly one pair: {broke:#?}")
    };
    assert_eq!(p.addr.to_string(), "10.66.111.1");
    assert_eq!(p.result, "From 10.2.22.0 Destination Net Unreachable");
    assert_eq!(
        p.why,
        [
            "1. k-w2: 10.66.111.1 matches 10.66.111.0/24 (bird) via 10.2.22.0, out ens3",
            "2. Leaf-2 in Ethernet2: no route to 10.66.111.1 → ICMP net unreachable from 10.2.22.0",
        ]
    );
    // A pod behind k-w2 sends the same way, and Leaf-2's ICMP error cannot come back either.
    let from_pod = reach(s)
        .broke
        .iter()
        .find(|p| p.from == "default/test-pod" && p.addr.to_string() == "10.66.111.1")
        .expect("test-pod loses 10.66.111.1");
    assert_eq!(
        from_pod.why.last().map(String::as_str),
        Some("3. Leaf-2 in Ethernet2: no route to 10.66.111.1 → ICMP net unreachable, which is lost on its way back")
    );
}

#[test]
fn seed_lab_sessions_changes_carry_the_speakers_reason() {
    let run = run_to("s3a-leaf-1");
    let s = run.steps.last().expect("step");
    let leaf1: Vec<String> = s
        .peers
        .iter()
        .filter(|c| c.device == "Leaf-1")
        .map(|c| format!("{} {} -> {} {:?}", c.peer, c.before, c.after, c.reason))
        .collect();
    assert_eq!(
        leaf1,
        [
            "BGP 10.0.11.1 not configured -> Active Some(\"Socket: Connection refused (the neighbour has no session for this address)\")",
            "BGP 10.1.11.1 not configured -> Active Some(\"Socket: Connection refused (the neighbour has no session for this address)\")",
        ]
    );
}

/// After the whole migration every host and pod reaches every other: the matrix, not a
/// sample of pings.
#[test]
fn seed_lab_ends_with_every_pair_answering() {
    let opened = fabsim::scenario::open(std::path::Path::new("scenarios/seed-lab.yaml")).expect("open");
    let run = fabsim::scenario::run(&opened, None).expect("run");
    let last = run.steps.last().expect("steps");
    assert!(reach(last).pairs >= 72, "{:?}", last.reach);
    assert_eq!(reach(last).reachable, reach(last).pairs, "{:#?}", last.reach);
    // s5's BGPPeers healed what s3 broke.
    let s5 = run.steps.iter().find(|s| s.id == "s5").expect("s5");
    assert!(
        reach(s5).broke.is_empty() && !reach(s5).healed.is_empty(),
        "{:#?}",
        s5.reach
    );
}

#[test]
fn large_steps_summarise_routes_unless_verbose() {
    let text = |extra: &[&str]| {
        let mut args = vec!["run", "scenarios/seed-lab.yaml", "--until", "s3b"];
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&fabsim(&args).stdout).into_owned()
    };
    let short = text(&[]);
    let s3b = &short[short.find("[s3b]").expect("s3b")..];
    assert!(s3b.contains("    k-master: 3 added, 3 withdrawn\n"), "{s3b}");
    assert!(s3b.contains("(--verbose lists each route)"), "{s3b}");
    let long = text(&["--verbose"]);
    let s3b = &long[long.find("[s3b]").expect("s3b")..];
    assert!(!s3b.contains("3 added, 3 withdrawn"), "{s3b}");
    assert!(s3b.contains("    k-master: + "), "{s3b}");
}

/// Past `limits: reach_endpoints` the matrix is not computed, and the report says so once.
#[test]
fn over_the_endpoint_limit_the_matrix_is_skipped_and_said_so() {
    let doc = json(&["tests/data/impact/limited.yaml"]);
    assert_eq!(
        strings(&doc["start"]["findings"]),
        ["reachability matrix not computed: 3 hosts and pods is over `limits: reach_endpoints` (2)"]
    );
    assert!(doc["start"]["reach"].is_null());
    let s = step(&doc, "loop");
    assert!(s["reach"].is_null());
    assert!(strings(&s["findings"]).is_empty(), "{:#}", s["findings"]);
}

/// k8s-cidr-migrations.md P1-11/P1-12 (check C21): a scenario's `hardcoded:` addresses are
/// watched. Each is written for what first holds it (a Service, a pod, a host); the step after
/// which it points at nothing is a finding naming the config and what it was written for, once;
/// a host that is off still holds its configured address (the outage is the matrix's, not the
/// config's); an address nothing ever held is a warning at its line.
#[test]
fn hard_coded_addresses_are_findings_when_what_they_meant_goes() {
    let doc = json(&["tests/data/hardcoded.yaml"]);
    let hard_coded = |id: &str| -> Vec<String> {
        strings(&step(&doc, id)["findings"])
            .into_iter()
            .filter(|f| f.starts_with("hard-coded "))
            .collect()
    };
    for quiet in ["cluster", "join-n2", "calico", "pinned", "n3-down"] {
        assert_eq!(hard_coded(quiet), Vec::<String>::new(), "{quiet}");
    }
    assert_eq!(
        hard_coded("recreate"),
        [
            "hard-coded 10.96.0.100 in prometheus.yml in monitoring/prometheus-config points at nothing now: \
          no Service, pod or host has it; it was written for Service default/pinned — update the config \
          (k8s-cidr-migrations.md P1-11/P1-12: find hard-coded addresses before the window)"
        ]
    );
    let gone = hard_coded("web-gone");
    assert_eq!(gone.len(), 1, "{gone:?}");
    assert!(
        gone[0].starts_with("hard-coded 10.66.217.2 in DB_HOST of the client app points at nothing now")
            && gone[0].contains("it was written for pod default/web"),
        "{gone:?}"
    );
    let warnings = step(&doc, "n3-down")["warnings"].as_array().expect("warnings").clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["span"]["line"], 8);
    assert_eq!(warnings[0]["span"]["col"], 5);
    let message = warnings[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("hard-coded 10.99.99.99 (a forgotten syslog target) never pointed at anything"),
        "{message}"
    );
}

/// Issue #7 item 3: a cluster range that shares addresses with an external network the topology
/// declares is a finding naming both and what they share. The seed lab's ranges (pool
/// 10.66.0.0/16, services 10.96.0.0/12) stay clear of its internet (segment 10.0.137.0/24,
/// 8.8.8.8); a pool over 10.0.128.0/17 or 8.0.0.0/7 would not.
#[test]
fn a_cluster_range_over_an_external_network_is_a_finding() {
    let run = run_to("s1-calico");
    let net = run.engine.network();
    let mut cluster = net.cluster.as_deref().expect("cluster").clone();
    assert_eq!(cluster.external_overlaps(net), Vec::<String>::new());
    let pools =
        "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: wide}\nspec: {cidr: 10.0.128.0/17}\n---\n\
                 apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: eights}\nspec: {cidr: 8.0.0.0/7}\n";
    let calico = cluster.calico.as_mut().expect("calico");
    calico.datastore.load_yaml(pools, "pools.yaml").expect("valid pools");
    let found = cluster.external_overlaps(net);
    let external = net
        .devices
        .iter()
        .find(|d| d.kind == fabsim::model::DeviceKind::External)
        .expect("the seed lab's internet");
    assert_eq!(
        found,
        [
            format!(
                "IPPool eights 8.0.0.0/7 overlaps external network {} (its destination 8.8.8.8): an address in both \
                 is ambiguous (k8s-cidr-migrations.md §2.1: ranges conflicting with other systems)",
                external.name
            ),
            format!(
                "IPPool wide 10.0.128.0/17 overlaps external network {} (its segment 10.0.137.0/24): an address in \
                 both is ambiguous (k8s-cidr-migrations.md §2.1: ranges conflicting with other systems)",
                external.name
            ),
        ]
    );
}
