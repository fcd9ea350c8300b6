//! Scripted pod facts (`inject: pods:` in a scenario, `k8s::pod_facts`) end to end: the input
//! is the YAML list under `pods:`, parsed by the scenario reader, injected into the pods of a
//! small converged cluster (`tests/data/kubeadm-preflight.yaml` up to its `calico` step), and
//! printed by every kubectl view that shows facts (`get pods`, `describe pod`, `logs [-p]`,
//! `get events`) at a later virtual time. Output or a diagnostic, never a panic.
//!
//! Why a target of its own: the `scenario` target only parses, so the facts' arithmetic (ages
//! counted back from the injection, restart counts, event counts) and their rendering in
//! kubectl's tables are reached only here.
#![no_main]
use std::path::Path;
use std::sync::OnceLock;

use fabsim::engine::State;
use fabsim::model::{DeviceId, Network};
use fabsim::scenario::file::Action;
use libfuzzer_sys::fuzz_target;

fn cluster() -> &'static (Network, State, DeviceId) {
    static CLUSTER: OnceLock<(Network, State, DeviceId)> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/kubeadm-preflight.yaml");
        let opened = fabsim::scenario::open(Path::new(file)).expect("scenario");
        let run = fabsim::scenario::run(&opened, Some("calico")).expect("replay");
        let net = run.engine.network().clone();
        let dev = net.device_by_name("k-master").expect("k-master");
        (net, run.engine.state().clone(), dev)
    })
}

/// The views that print injected facts; `{ns}`/`{pod}` name each pod the facts went to.
const VIEWS: &[&str] = &[
    "kubectl get pods -A",
    "kubectl get pods -A -o wide",
    "kubectl get events -A",
    "kubectl describe pod -n {ns} {pod}",
    "kubectl logs -n {ns} {pod}",
    "kubectl logs -p -n {ns} {pod}",
];

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else { return };
    let mut text = String::from("topology: none.yaml\nsteps:\n  - id: f\n    inject:\n      pods:\n");
    for line in body.lines() {
        text.push_str("        ");
        text.push_str(line);
        text.push('\n');
    }
    let Ok(scenario) = fabsim::scenario::file::parse_scenario(&text, "fuzz.yaml", Path::new(".")) else {
        return;
    };
    let (net, st, dev) = cluster();
    for step in &scenario.steps {
        let Action::Inject { pods, .. } = &step.action else {
            continue;
        };
        let mut net = net.clone();
        let Some(c) = net.cluster.as_deref_mut() else { return };
        let Ok(changed) = fabsim::k8s::inject_pod_facts(c, pods, st.time_ms) else {
            continue;
        };
        let mut st = st.clone();
        // Two hours later: the facts' ages are counted from the injection to the views' now.
        st.time_ms = st.time_ms.saturating_add(7_200_000);
        for view in VIEWS {
            for pod in changed.iter().take(4) {
                let (ns, name) = pod.split_once('/').unwrap_or(("default", pod));
                let line = view.replace("{ns}", ns).replace("{pod}", name);
                let _ = fabsim::views::run_command(&net, &st, *dev, &line);
            }
        }
    }
});
