//! Runbook commands against the cluster model: kubeadm's preflight, joining, scheduling around
//! the control-plane taint, and what `kubectl` shows meanwhile.

use std::path::Path;

use fabsim::scenario::{self, has_line, Run};
use fabsim::views;

fn run_to(step: &str) -> Run {
    let opened = scenario::open(Path::new("tests/data/kubeadm-preflight.yaml")).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, Some(step)).unwrap_or_else(|e| panic!("{e}"))
}

fn on(run: &Run, device: &str, command: &str) -> String {
    let net = run.engine.network();
    let dev = net.device_by_name(device).expect("device");
    views::run_command(net, run.engine.state(), dev, command).unwrap_or_else(|e| panic!("{}", e.message))
}

#[test]
fn kubeadm_preflight_fails_without_ip_forwarding() {
    let run = run_to("first-try");
    let step = &run.steps[0];
    assert_eq!(step.commands[0].status, 1);
    assert!(has_line(
        &step.commands[0].output,
        "[ERROR FileContent--proc-sys-net-ipv4-ip_forward]: /proc/sys/net/ipv4/ip_forward contents are not set to 1"
    ));
    assert!(step.findings.iter().any(|f| f.contains("failed (exit status 1)")));
    // No cluster exists.
    assert!(on(&run, "k-master", "kubectl get nodes").contains("connection to the server localhost:8080 was refused"));
}

#[test]
fn joining_before_init_is_refused() {
    let run = run_to("join-too-early");
    let join = &run.steps[1].commands[1];
    assert_eq!(join.status, 1);
    assert!(join.output.contains("connection refused"), "{}", join.output);
}

#[test]
fn pods_wait_for_the_cni_and_avoid_the_tainted_control_plane() {
    let run = run_to("fixed");
    let pods = on(&run, "k-master", "kubectl get pods -o wide");
    assert!(
        has_line(&pods, "web 0/1 Pending 0 ... <none> <none> <none> <none>"),
        "{pods}"
    );
    let run = run_to("calico");
    // Calico makes k-master Ready, but `web` does not tolerate its taint: it stays Pending.
    assert!(has_line(
        &on(&run, "k-master", "kubectl get nodes"),
        "k-master Ready control-plane ... v1.28.15"
    ));
    let pods = on(&run, "k-master", "kubectl get pods -o wide");
    assert!(has_line(&pods, "web 0/1 Pending 0 ..."), "{pods}");
    // coredns tolerates it and runs there, with an address from k-master's block.
    let system = on(&run, "k-master", "kubectl get pods -n kube-system -o wide");
    assert!(
        has_line(
            &system,
            "coredns-... 1/1 Running 0 ... 10.66.73.129 k-master <none> <none>"
        ),
        "{system}"
    );
}
