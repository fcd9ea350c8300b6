//! User Deployments through `kubectl apply|create -f` (tests/data/deployment.yaml): the pods
//! are the ReplicaSet's (`NAME-HASH-SUFFIX`), scheduled and started like every pod; applying
//! again compares replica counts; a scaled-down pod is not replaced, a deleted one is; what
//! fabsim cannot apply is an error at the step, never a silent no-op.

use std::path::Path;

mod common;
use common::step;

use fabsim::scenario::{self, Run};

const SCENARIO: &str = "tests/data/deployment.yaml";

fn run() -> Run {
    let opened = scenario::open(Path::new(SCENARIO)).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, None).unwrap_or_else(|e| panic!("{e}"))
}

/// The web Deployment's pods that are not being deleted.
fn live_web_pods(run: &Run) -> Vec<String> {
    let cluster = run.engine.network().cluster.as_deref().expect("a cluster");
    cluster
        .pods
        .iter()
        .filter(|p| p.namespace == "default" && p.name.starts_with("web-") && p.deleted_ms.is_none())
        .map(|p| p.name.clone())
        .collect()
}

#[test]
fn apply_creates_the_replicas_and_applying_again_scales() {
    let run = run();
    let web = step(&run, "web");
    let outputs: Vec<&str> = web.commands.iter().map(|c| c.output.as_str()).collect();
    assert_eq!(
        outputs,
        [
            "deployment.apps/web created\n",
            "deployment.apps/web unchanged\n",
            "Error from server (AlreadyExists): error when creating \"web\": deployments.apps \"web\" already exists\n",
        ]
    );
    let three = step(&run, "three");
    assert_eq!(three.commands[0].output, "deployment.apps/web configured\n");
    let listed = &three.commands[1].output;
    assert_eq!(listed.lines().count(), 4, "a header and three pods:\n{listed}");
    for line in listed.lines().skip(1) {
        let name = line.split_whitespace().next().unwrap_or_default();
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts.len(), 3, "NAME-HASH-SUFFIX: {name}");
        assert_eq!((parts[0], parts[1].len(), parts[2].len()), ("web", 10, 5), "{name}");
        assert!(
            line.contains(" Running ") && line.contains(" n2 "),
            "on the worker: {line}"
        );
    }
    assert_eq!(step(&run, "one").commands[0].output, "deployment.apps/web configured\n");
    // Scaled down to one: the others go and nothing replaces them.
    assert_eq!(live_web_pods(&run).len(), 1, "{:?}", live_web_pods(&run));
}

/// A variant of the scenario ending in `extra` (a step's YAML), run to its end: the error
/// fabsim stops with, or None.
fn error_of(extra: &str) -> Option<String> {
    let text = std::fs::read_to_string(SCENARIO).expect("scenario") + extra;
    let dir = std::env::temp_dir().join(format!("fabsim-deployments-{}-{}", std::process::id(), text.len()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("deployment.yaml");
    std::fs::write(&file, text).expect("write");
    std::fs::copy(
        "tests/data/calico-encap-topology.yaml",
        dir.join("calico-encap-topology.yaml"),
    )
    .expect("topology");
    let opened = scenario::open(&file).unwrap_or_else(|e| panic!("{e}"));
    let out = scenario::run(&opened, None).err().map(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn what_apply_cannot_do_is_an_error_at_the_step() {
    let changed = error_of(
        "  - id: new-image\n    on: n1\n    files:\n      web.yaml: |\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata:\n          name: web\n        spec:\n          selector:\n            matchLabels: {app: web}\n          template:\n            metadata:\n              labels: {app: web}\n            spec:\n              containers:\n              - name: web\n                image: alpine\n    run: kubectl apply -f web.yaml\n",
    )
    .expect("a changed template is refused");
    assert!(
        changed.contains(
            "Deployment web's pod template changed; fabsim does not roll a new ReplicaSet from kubectl apply"
        ),
        "{changed}"
    );
    let mixed = error_of(
        "  - id: mixed\n    on: n1\n    files:\n      both.yaml: |\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata:\n          name: api\n        spec:\n          selector:\n            matchLabels: {app: api}\n          template:\n            metadata:\n              labels: {app: api}\n            spec:\n              containers:\n              - name: api\n                image: nginx:alpine\n        ---\n        apiVersion: v1\n        kind: Secret\n        metadata:\n          name: token\n    run: kubectl apply -f both.yaml\n",
    )
    .expect("a mixed file is refused");
    assert!(
        mixed.contains("fabsim applies a file of Deployments on its own"),
        "{mixed}"
    );
    let job = error_of(
        "  - id: job\n    on: n1\n    files:\n      job.yaml: |\n        apiVersion: batch/v1\n        kind: Job\n        metadata:\n          name: once\n    run: kubectl apply -f job.yaml\n",
    )
    .expect("an unmodelled kind is not skipped in silence");
    assert!(job.contains("not applied:") && job.contains("Job"), "{job}");
    let selector = error_of(
        "  - id: bad-selector\n    on: n1\n    files:\n      api.yaml: |\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata:\n          name: api\n        spec:\n          selector:\n            matchLabels: {app: other}\n          template:\n            metadata:\n              labels: {app: api}\n            spec:\n              containers:\n              - name: api\n                image: nginx:alpine\n    run: kubectl apply -f api.yaml\n",
    );
    assert!(
        selector
            .as_deref()
            .is_some_and(|e| e.contains("`selector` does not match template `labels`")),
        "{selector:?}"
    );
}
