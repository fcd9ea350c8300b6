//! One runbook line on k-master of a small converged cluster (kubeadm + Calico, built once):
//! changing lines go through `k8s::run_line` and `k8s::realize`, the others through the views.
//! Output or an error, never a panic. Input: the line, then (after the first newline) its stdin.
#![no_main]
use std::path::Path;
use std::sync::OnceLock;

use fabsim::engine::State;
use fabsim::model::{DeviceId, Network};
use libfuzzer_sys::fuzz_target;

/// The cluster after `kubeadm-preflight.yaml`'s `calico` step; replaying it per input would
/// cost milliseconds each.
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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (line, stdin) = match text.split_once('\n') {
        Some((l, s)) => (l, Some(s)),
        None => (text, None),
    };
    let (net, st, dev) = cluster();
    if fabsim::k8s::is_change(line) {
        let mut net = net.clone();
        let files = std::collections::BTreeMap::new();
        let ctx = fabsim::k8s::Context {
            now: 3_600_000,
            pins: &[],
            stdin,
            // No files: `-f NAME` fails to read rather than touching the checkout.
            files: &files,
            base: Path::new("/nonexistent"),
            pod_start_ms: 0,
            static_pod_restart_ms: 20_000,
            node_monitor_grace_ms: 40_000,
        };
        if fabsim::k8s::run_line(&mut net, st, *dev, line, &ctx).is_ok() {
            let _ = fabsim::k8s::realize(&mut net);
        }
    } else {
        let _ = fabsim::views::run_command(net, st, *dev, line);
    }
});
