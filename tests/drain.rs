//! Drains that do not finish (tests/data/drain.yaml, three nodes of calico-encap-topology.yaml,
//! n1 the control plane; k8s-cidr-migrations.md §2.4 step 4, §2.5, §2.6 P1-9, §5 C19): the
//! emptyDir filter, PodDisruptionBudgets (the apiserver's refusals, `kubectl get pdb`, the
//! Eviction API's 429 retried every 5s in virtual time, `--timeout`, fabsim's stop of an
//! endless drain, `--disable-eviction`), pods held Terminating by a finalizer or a stopped
//! kubelet, and `--force`.

mod common;

use common::{assert_has, cluster, printed, run_file, step};
use fabsim::k8s::{Owner, PodPhase};
use fabsim::scenario::Run;

const SCENARIO: &str = "tests/data/drain.yaml";

/// The CoreDNS pods on `node`, by name.
fn coredns_on(run: &Run, node: &str) -> Vec<String> {
    let mut names: Vec<String> = cluster(run)
        .pods
        .iter()
        .filter(|p| p.owner == Owner::Deployment("coredns".into()) && p.node.as_deref() == Some(node))
        .filter(|p| p.deleted_ms.is_none())
        .map(|p| p.name.clone())
        .collect();
    names.sort();
    names
}

fn findings_with<'a>(run: &'a Run, id: &str, needle: &str) -> Vec<&'a String> {
    step(run, id).findings.iter().filter(|f| f.contains(needle)).collect()
}

const REFUSED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

#[test]
fn budgets_are_validated_listed_and_an_emptydir_stops_the_drain() {
    let run = run_file(SCENARIO, "emptydir");
    assert_eq!(
        printed(&run, "budgets", "kubectl apply -f dns-pdb.yaml"),
        ("poddisruptionbudget.policy/dns created\n".into(), 0)
    );
    let (both, status) = printed(&run, "budgets", "kubectl apply -f both.yaml");
    assert_eq!(status, 1);
    assert!(
        both.starts_with(
            "The PodDisruptionBudget \"both\" is invalid: spec: Invalid value: policy.PodDisruptionBudgetSpec{"
        ),
        "{both}"
    );
    assert!(
        both.ends_with("}: minAvailable and maxUnavailable cannot be both set\n"),
        "{both}"
    );
    assert_eq!(
        printed(&run, "budgets", "kubectl apply -f percent.yaml"),
        (
            "The PodDisruptionBudget \"percent\" is invalid: spec.maxUnavailable: Invalid value: \
             intstr.IntOrString{Type:1, IntVal:0, StrVal:\"half\"}: a valid percent string must be a numeric string \
             followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')\n"
                .into(),
            1
        )
    );
    assert_eq!(cluster(&run).pdbs.len(), 1, "refused budgets are not created");
    // Two healthy CoreDNS pods, two wanted: no disruption allowed.
    let (table, _) = printed(&run, "budgets", "kubectl get pdb -A");
    assert_has(
        &table,
        &[
            "NAMESPACE NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
            "kube-system dns 2 N/A 0 0s",
        ],
    );
    let status = cluster(&run).pdb_status(&cluster(&run).pdbs[0]);
    assert_eq!(
        (
            status.current_healthy,
            status.desired_healthy,
            status.expected,
            status.disruptions_allowed
        ),
        (2, 2, 2, 0)
    );

    let (out, status) = printed(&run, "emptydir", "kubectl drain n2 --ignore-daemonsets");
    let err = "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/cache";
    assert_eq!(
        out,
        format!(
            "node/n2 cordoned\n\
             error: unable to drain node \"n2\" due to error:{err}, continuing command...\n\
             There are pending nodes to be drained:\n n2\n{err}\n"
        )
    );
    assert_eq!(status, 1);
    assert!(cluster(&run).pod("default", "cache").is_some());
}

#[test]
fn a_budget_that_allows_nothing_blocks_the_drain_until_its_timeout() {
    let run = run_file(SCENARIO, "timeout");
    let dns = coredns_on(&run, "n2");
    let [pod] = dns.as_slice() else {
        panic!("one CoreDNS pod on n2: {dns:?}")
    };
    let evicting = format!("evicting pod kube-system/{pod}\n");
    let refused = format!("error when evicting pods/\"{pod}\" -n \"kube-system\" (will retry after 5s): {REFUSED}\n");
    let (out, status) = printed(
        &run,
        "blocked",
        "kubectl drain n2 --ignore-daemonsets --delete-emptydir-data --force",
    );
    assert_eq!(status, 1);
    // The cache pod goes at once; CoreDNS's is refused at 0s and again at 5s, and nothing
    // else can change: fabsim stops where kubectl would retry for ever.
    assert!(
        out.contains(&format!(
            "evicting pod default/cache\n{evicting}{refused}pod/cache evicted\n{evicting}{refused}(fabsim: "
        )),
        "{out}"
    );
    assert!(!out.contains("drained"), "{out}");
    assert!(cluster(&run).pod("default", "cache").is_none());
    assert_eq!(
        findings_with(&run, "blocked", "drain of n2 blocked"),
        [&format!(
            "drain of n2 blocked: evicting kube-system/{pod} would violate PodDisruptionBudget kube-system/dns \
             (ALLOWED DISRUPTIONS 0): kubectl drain would retry forever (k8s-cidr-migrations.md §2.5 stuck drains, §5 C19)"
        )]
    );
    assert_eq!(
        findings_with(&run, "blocked", "used --force"),
        [
            &"kubectl drain n2 used --force (pods that declare no controller deleted for good: default/cache): \
           k8s-cidr-migrations.md §2.6 P1-9, §5 C19 say do not start with --force"
                .to_string()
        ]
    );

    // With --timeout=20s: attempts at 0, 5, 10 and 15s are refused; at 20s the timeout.
    let (out, status) = printed(
        &run,
        "timeout",
        "kubectl drain n2 --ignore-daemonsets --delete-emptydir-data --timeout=20s",
    );
    assert_eq!(status, 1);
    let err = format!("error when evicting pods/\"{pod}\" -n \"kube-system\": global timeout reached: 20s");
    let tail = format!(
        "{}{evicting}There are pending pods in node \"n2\" when an error occurred: {err}\npod/{pod}\n\
         error: unable to drain node \"n2\" due to error:{err}, continuing command...\n\
         There are pending nodes to be drained:\n n2\n{err}\n",
        format!("{evicting}{refused}").repeat(4)
    );
    assert!(out.ends_with(&tail), "{out}");
    assert_eq!(coredns_on(&run, "n2"), std::slice::from_ref(pod));
    // The drain ran 20s of virtual time: the budget is 20s older after it.
    let age = |command: &str| {
        let (table, _) = printed(&run, "timeout", command);
        let age = table
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_default();
        fabsim::scenario::parse_duration(age).unwrap_or_else(|| panic!("{table}"))
    };
    assert_eq!(
        age("kubectl get pdb -n kube-system") - age("kubectl get pdb dns -n kube-system"),
        20_000
    );
}

#[test]
fn a_relaxed_budget_lets_the_drain_finish_one_pod_at_a_time() {
    let run = run_file(SCENARIO, "unbudgeted");
    let (relaxed, _) = printed(&run, "relaxed", "kubectl get pdb -n kube-system");
    assert_has(&relaxed, &["dns 1 N/A 1 ..."]);
    let (out, status) = printed(
        &run,
        "relaxed",
        "kubectl drain n2 --ignore-daemonsets --delete-emptydir-data",
    );
    assert_eq!(status, 0);
    assert!(out.ends_with("evicted\nnode/n2 drained\n"), "{out}");
    assert!(findings_with(&run, "relaxed", "blocked").is_empty());

    // Both CoreDNS pods were on n1: the first eviction takes the one disruption allowed, the
    // second is refused until the controller counts the first one's replacement, 5s later.
    let (listed, _) = printed(
        &run,
        "one-at-a-time",
        "kubectl get pods -n kube-system -l k8s-app=kube-dns -o wide",
    );
    let on_n1: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter(|l| l.contains(" n1 "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let [first, second] = on_n1.as_slice() else {
        panic!("two CoreDNS pods on n1: {listed}")
    };
    let (out, status) = printed(&run, "one-at-a-time", "kubectl drain n1 --ignore-daemonsets");
    assert_eq!(status, 0);
    assert!(
        out.ends_with(&format!(
            "evicting pod kube-system/{first}\nevicting pod kube-system/{second}\n\
             error when evicting pods/\"{second}\" -n \"kube-system\" (will retry after 5s): {REFUSED}\n\
             pod/{first} evicted\nevicting pod kube-system/{second}\npod/{second} evicted\nnode/n1 drained\n"
        )),
        "{out}"
    );
    // The second replacement was created 5s of virtual time after the first.
    let start = step(&run, "one-at-a-time").start_ms;
    let mut created: Vec<u64> = cluster(&run)
        .pods
        .iter()
        .filter(|p| p.owner == Owner::Deployment("coredns".into()) && p.created_ms >= start)
        .filter(|p| p.created_ms < step(&run, "unbudgeted").start_ms)
        .map(|p| p.created_ms - start)
        .collect();
    created.sort();
    assert_eq!(created, [0, 5_000]);

    assert_eq!(
        printed(&run, "unbudgeted", "kubectl get pdb -A"),
        ("No resources found\n".into(), 0)
    );
    let (out, status) = printed(&run, "unbudgeted", "kubectl drain n1 --ignore-daemonsets");
    assert_eq!(status, 0);
    assert!(out.ends_with("node/n1 drained\n"), "{out}");
}

#[test]
fn a_finalizer_keeps_the_pod_terminating_until_it_is_patched_away() {
    let run = run_file(SCENARIO, "held-patch");
    let (out, status) = printed(&run, "held-drain", "kubectl drain n3 --ignore-daemonsets --force");
    assert_eq!(status, 1);
    assert!(out.contains("evicting pod default/held\n"), "{out}");
    assert!(!out.contains("pod/held evicted"), "{out}");
    assert_eq!(
        findings_with(&run, "held-drain", "blocked"),
        [
            &"drain of n3 blocked: pod default/held stays Terminating (finalizers [example.com/backup-done]): kubectl \
           drain waits for it forever (k8s-cidr-migrations.md §2.5 stuck drains, §5 C19)"
                .to_string()
        ]
    );
    // C19 after every step while it lasts, with how long.
    let c19 = findings_with(&run, "held-wait", "pod default/held Terminating for");
    assert_eq!(c19.len(), 1, "{:?}", step(&run, "held-wait").findings);
    assert!(
        c19[0].ends_with(
            "longer than its grace period (30s): finalizers [example.com/backup-done] \
             (k8s-cidr-migrations.md §2.6 P1-9, §5 C19: a drain waits for it)"
        ),
        "{}",
        c19[0]
    );
    // Its kubelet stopped it and the CNI DEL released its address; the object stays.
    let (listed, _) = printed(&run, "held-patch", "kubectl get pods -o wide");
    assert_has(&listed, &["held 0/1 Terminating 0 ... <none> n3 <none> <none>"]);
    assert_eq!(
        printed(
            &run,
            "held-patch",
            "kubectl patch pod held --type=merge -p '{\"metadata\":{\"finalizers\":null}}'"
        ),
        ("pod/held patched\n".into(), 0)
    );
    assert_eq!(
        printed(&run, "held-patch", "kubectl get pods"),
        ("No resources found in default namespace.\n".into(), 0)
    );
    let (out, status) = printed(&run, "held-patch", "kubectl drain n3 --ignore-daemonsets");
    assert_eq!(status, 0);
    assert!(out.ends_with("node/n3 drained\n"), "{out}");
    assert!(step(&run, "held-patch")
        .findings
        .iter()
        .all(|f| !f.contains("Terminating")));
}

#[test]
fn a_pod_on_a_stopped_kubelet_stays_terminating_until_the_kubelet_returns() {
    let run = run_file(SCENARIO, "start-n2");
    let (out, status) = printed(
        &run,
        "stray-drain",
        "kubectl drain n2 --ignore-daemonsets --force --timeout=10s",
    );
    assert_eq!(status, 1);
    assert_has(
        &out,
        &["error when waiting for pod \"stray\" in namespace \"default\" to terminate: global timeout reached: 10s"],
    );
    // Nothing stopped its containers: it keeps its address and shows Terminating.
    assert_has(
        &printed(&run, "stray-drain", "kubectl get pods -o wide").0,
        &["stray 1/1 Terminating 0 ... 10.66... n2 <none> <none>"],
    );
    assert!(
        findings_with(&run, "stray-wait", "pod default/stray Terminating for")
            .iter()
            .all(|f| f.contains("grace period (30s): kubelet on n2 stopped")),
        "{:?}",
        step(&run, "stray-wait").findings
    );
    assert_eq!(
        findings_with(&run, "stray-wait", "pod default/stray Terminating").len(),
        1
    );
    // The kubelet back: it stops the pod, the CNI DEL frees the address, the object goes.
    assert!(cluster(&run).pod("default", "stray").is_none());
    assert!(step(&run, "start-n2")
        .findings
        .iter()
        .all(|f| !f.contains("Terminating")));
    assert!(cluster(&run)
        .pods
        .iter()
        .all(|p| p.deleted_ms.is_none() && (p.phase == PodPhase::Running || p.node.is_none())));
}

#[test]
fn disable_eviction_deletes_past_a_budget_that_allows_nothing() {
    let run = run_file(SCENARIO, "bypass");
    let created: Vec<(&str, i32)> = step(&run, "bypass")
        .commands
        .iter()
        .filter(|c| c.command == "kubectl create -f dns-pdb.yaml")
        .map(|c| (c.output.as_str(), c.status))
        .collect();
    assert_eq!(
        created,
        [
            ("poddisruptionbudget.policy/dns created\n", 0),
            (
                "Error from server (AlreadyExists): poddisruptionbudgets.policy \"dns\" already exists\n",
                1
            )
        ]
    );
    assert_has(
        &printed(&run, "bypass", "kubectl get pdb -n kube-system").0,
        &["dns N/A 0 0 0s"],
    );
    let (listed, _) = printed(
        &run,
        "bypass",
        "kubectl get pods -n kube-system -l k8s-app=kube-dns -o wide",
    );
    let on_n3: Vec<&str> = listed
        .lines()
        .filter(|l| l.contains(" n3 "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let [pod] = on_n3.as_slice() else {
        panic!("one CoreDNS pod on n3: {listed}")
    };
    let (out, status) = printed(
        &run,
        "bypass",
        "kubectl drain n3 --ignore-daemonsets --disable-eviction",
    );
    assert_eq!(status, 0);
    assert!(out.ends_with(&format!("pod/{pod} deleted\nnode/n3 drained\n")), "{out}");
    assert!(!out.contains("evicting"), "{out}");
    assert!(coredns_on(&run, "n3").is_empty());
}
