//! Scripted pod facts (`inject: pods:`, tests/data/pod-facts.yaml): readiness, status,
//! restarts, logs and events as `kubectl get pods|events`, `logs [-p]` and `describe pod` show
//! them, ageing with virtual time, and gone once the pod is replaced or its node reboots.

mod common;

use common::{assert_has, fabsim, out_in, run_file};

const SCENARIO: &str = "tests/data/pod-facts.yaml";
const CONTROLLER: &str = "calico-kube-controllers-658d97c59c-aaaaa";

#[test]
fn kubectl_shows_the_injected_facts_in_its_own_formats() {
    let run = run_file(SCENARIO, "broken");
    let pods = out_in(&run, "n1", "kubectl get pods -A");
    assert_has(
        &pods,
        &[
            &format!("kube-system {CONTROLLER} 0/1 CrashLoopBackOff 7 (30m ago) ..."),
            // Only what was injected changes: calico-node's STATUS stays the derived one.
            "kube-system calico-node-node2 0/1 Running 0 ...",
        ],
    );
    let log = out_in(&run, "n1", &format!("kubectl logs -p {CONTROLLER} -n kube-system"));
    assert_eq!(log, "[FATAL][1] main.go 151: Failed to initialize Calico datastore\n");
    let described = out_in(&run, "n1", &format!("kubectl describe pod {CONTROLLER} -n kube-system"));
    // describe.go: Events table at tabwriter padding 2, repeated events as `(xN over AGE)`.
    let events: Vec<&str> = described.lines().skip_while(|l| *l != "Events:").collect();
    assert_eq!(
        events,
        [
            "Events:",
            "  Type     Reason     Age                 From               Message",
            "  ----     ------     ----                ----               -------",
            "  Normal   Scheduled  14m                 default-scheduler  Successfully assigned the pod",
            "  Warning  BackOff    12m (x24 over 20m)  kubelet            Back-off restarting failed container",
        ]
    );
    assert_has(
        &described,
        &["Controlled By: ReplicaSet/calico-kube-controllers-658d97c59c"],
    );
    assert_has(
        &out_in(&run, "n1", "kubectl get events -n kube-system"),
        &[
            "LAST SEEN TYPE REASON OBJECT MESSAGE",
            "10m (x3 over 10h) Warning Unhealthy pod/calico-node-node1 Readiness probe failed: 503",
        ],
    );
}

#[test]
fn ages_grow_with_virtual_time() {
    let run = run_file(SCENARIO, "later");
    let pods = out_in(&run, "n1", "kubectl get pods -n kube-system");
    // A minute and more after the injection, the last restart is older than the 30 minutes
    // injected, and the event's last occurrence too.
    let controller = pods
        .lines()
        .find(|l| l.starts_with(CONTROLLER))
        .expect("the controller");
    assert!(
        controller.contains(" 7 (3") && !controller.contains("(30m ago)"),
        "{pods}"
    );
    let events = out_in(&run, "n1", "kubectl get events -A");
    assert!(
        events.contains("m (x3 over 10h)") && !events.contains("10m (x3"),
        "{events}"
    );
}

#[test]
fn a_replaced_pod_and_a_rebooted_node_start_clean() {
    let run = run_file(SCENARIO, "replace-controller");
    let pods = out_in(&run, "n1", "kubectl get pods -n kube-system");
    assert!(!pods.contains(CONTROLLER), "{pods}");
    assert_has(&pods, &["calico-kube-controllers-658d97c59c-bbbbb 1/1 Running 0 ..."]);
    assert_has(
        &out_in(&run, "n1", "kubectl logs -p calico-kube-controllers-658d97c59c-bbbbb -n kube-system"),
        &["Error from server (BadRequest): previous terminated container \"calico-kube-controllers\" in pod \"calico-kube-controllers-658d97c59c-bbbbb\" not found"],
    );
    assert_has(
        &out_in(
            &run,
            "n1",
            "kubectl describe pod calico-kube-controllers-658d97c59c-bbbbb -n kube-system",
        ),
        &["Events: <none>"],
    );

    let run = run_file(SCENARIO, "reboot-n3");
    let pods = out_in(&run, "n1", "kubectl get pods -n kube-system");
    assert_has(
        &pods,
        &[
            "calico-node-node3 1/1 Running 0 ...",
            "calico-node-node1 0/1 Running 0 ...",
        ],
    );
}

#[test]
fn bad_facts_are_errors_at_their_place() {
    let dir = std::env::temp_dir().join(format!("fabsim-pod-facts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "ready: zero",
            "4:39: error: expected `ready: READY/TOTAL` (like 0/1), found `zero`",
        ),
        (
            "events: [{type: Bad, reason: R, message: M}]",
            "4:48: error: expected an event `type: Normal` or `type: Warning`, found `Bad`",
        ),
    ];
    for (i, (facts, want)) in cases.iter().enumerate() {
        let file = dir.join(format!("bad-{i}.yaml"));
        let text = format!("topology: none.yaml\nsteps:\n  - id: s\n    inject: {{pods: [{{pod: a/b, {facts}}}]}}\n");
        std::fs::write(&file, text).unwrap();
        let out = fabsim(&["run", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want), "want `{want}` in:\n{err}");
    }
    // Facts for a pod that does not exist are an error at the step.
    let topology = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/calico-encap-topology.yaml");
    let file = dir.join("ghost.yaml");
    let text = format!(
        "topology: {topology}\nsteps:\n  - id: s\n    inject: {{pods: [{{pod: kube-system/ghost, ready: 0/1}}]}}\n"
    );
    std::fs::write(&file, text).unwrap();
    let out = fabsim(&["run", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("3:9: error: inject: pods: there is no Kubernetes cluster yet"),
        "{err}"
    );
}

/// `kubectl delete pod calico-node-…` restarts BIRD on that node as a rollout does: the old
/// container dies (its sessions close at once), the DaemonSet controller creates the new pod,
/// whose BIRD starts `timing: pod_start` (3 s) later and peers again.
#[test]
fn deleting_a_calico_node_pod_restarts_bird_on_its_node() {
    let run = run_file(SCENARIO, "delete-calico-node");
    let step = run.steps.last().expect("the step");
    let n2 = "BGP Mesh_192_168_1_12 (192.168.1.12)";
    let session = step
        .peers
        .iter()
        .find(|p| p.device == "n1" && p.peer == n2)
        .unwrap_or_else(|| panic!("n1's session to n2 did not change: {:?}", step.peers));
    assert_eq!(session.before, "Established");
    assert!(session.after.starts_with("Established again"), "{}", session.after);
    // Back only after the new pod's containers started: BIRD was down meanwhile.
    let up_since: f64 = session
        .after
        .rsplit_once("up since t=")
        .and_then(|(_, t)| t.trim_end_matches("s)").parse().ok())
        .expect("an up-since time");
    assert!(
        up_since * 1000.0 >= (step.start_ms + 3000) as f64,
        "{} vs start {}",
        session.after,
        step.start_ms
    );
    // n3's sessions with n1 never went down: only n2's calico-node restarted.
    assert!(!step
        .peers
        .iter()
        .any(|p| p.device == "n1" && p.peer.contains("192.168.2.13")));
    let pods = out_in(&run, "n1", "kubectl get pods -n kube-system -o wide");
    assert!(!pods.contains("calico-node-node2"), "{pods}");
    assert_has(&pods, &["calico-node-new22 1/1 Running 0 ... n2 ..."]);
}
