//! `calicoctl get KIND [NAME…] -o yaml|json` (one printer for every kind, lists as `…List`,
//! calicoctl's errors) and `kubectl get ippools|blockaffinities -o yaml|json` through the same
//! printer, against the seed lab's outputs (seed-lab.md s1, s3a) and calicoctl v3.25's source.

mod common;

use common::{out_in, run_to};

/// The seed's pastes lost their indentation: compare line by line, trimmed.
fn trimmed(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

/// seed-lab.md s3a (L1747-1762): `calicoctl get node k-master -o yaml | grep spec -A 100`
/// before the Node apply.
const NODE_SPEC_BEFORE: &str = "spec:
addresses:
- address: 10.0.137.12/24
type: CalicoNodeIP
- address: 10.0.11.1
type: InternalIP
bgp:
ipv4Address: 10.0.137.12/24
ipv4IPIPTunnelAddr: 10.66.111.0
orchRefs:
- nodeName: k-master
orchestrator: k8s
status:
podCIDRs:
- 10.66.0.0/24";

/// The same after the apply (L1768-1780; its missing status block is I20, a trimmed paste).
const NODE_SPEC_AFTER: &str = "spec:
addresses:
- address: 10.0.11.1/31
type: CalicoNodeIP
- address: 10.0.11.1
type: InternalIP
bgp:
asNumber: 65000
ipv4Address: 10.0.11.1/31
orchRefs:
- nodeName: k-master
orchestrator: k8s";

fn from_spec(text: &str) -> Vec<&str> {
    let lines = trimmed(text);
    let at = lines.iter().position(|l| *l == "spec:").expect("a spec");
    lines[at..].to_vec()
}

#[test]
fn node_yaml_is_the_seed_lab_text_line_for_line() {
    let before = run_to("s3a-bgpconfig");
    let text = out_in(&before, "k-master", "calicoctl get node k-master -o yaml");
    assert_eq!(from_spec(&text), trimmed(NODE_SPEC_BEFORE), "{text}");
    assert!(
        text.starts_with("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata:\n"),
        "{text}"
    );
    // KDD: the Kubernetes Node's labels, also stashed as JSON in an annotation.
    assert!(
        text.contains("    projectcalico.org/kube-labels: '{\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/hostname\":\"k-master\","),
        "{text}"
    );
    assert!(
        text.contains("    node-role.kubernetes.io/control-plane: \"\"\n"),
        "{text}"
    );

    let after = run_to("s3a");
    let text = out_in(&after, "k-master", "calicoctl get node k-master -o yaml");
    let spec = from_spec(&text);
    assert_eq!(spec[..12], trimmed(NODE_SPEC_AFTER)[..], "{text}");
    assert_eq!(
        spec[12..],
        ["status:", "podCIDRs:", "- 10.66.0.0/24"],
        "I20: the status stays"
    );
}

#[test]
fn without_a_name_calicoctl_prints_one_list_object() {
    let run = run_to("s4");
    let yaml = out_in(&run, "k-master", "calicoctl get bgppeer -o yaml");
    assert_eq!(
        yaml,
        "apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata:
    creationTimestamp: \"2025-08-03T05:15:41Z\"
    name: k-master-to-switch
  spec:
    asNumber: 65011
    nodeSelector: kubernetes.io/hostname == \"k-master\"
    peerIP: 10.0.11.0
kind: BGPPeerList
metadata: {}
"
    );
    // JSON keeps the Go structs' field order: TypeMeta (kind first), ListMeta, items.
    let json = out_in(&run, "k-master", "calicoctl get bgppeers -o json");
    assert!(
        json.starts_with("{\n  \"kind\": \"BGPPeerList\",\n  \"apiVersion\": \"projectcalico.org/v3\",\n  \"metadata\": {},\n  \"items\": [\n    {\n      \"kind\": \"BGPPeer\","),
        "{json}"
    );
    assert!(
        json.contains("\"spec\": {\n        \"nodeSelector\": \"kubernetes.io/hostname == \\\"k-master\\\"\",\n        \"peerIP\": \"10.0.11.0\",\n        \"asNumber\": 65011\n      }"),
        "BGPPeerSpec order (node, nodeSelector, peerIP, asNumber), sourceAddress left out when not written:\n{json}"
    );
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(parsed["items"].as_array().map(Vec::len), Some(1));

    let pools = out_in(&run, "k-master", "calicoctl get ippool -o yaml");
    assert!(pools.contains("\nkind: IPPoolList\nmetadata: {}\n"), "{pools}");
    assert!(
        pools.contains("    name: new-wonderful-pool\n  spec:\n    allowedUses:\n    - Workload\n    - Tunnel\n    blockSize: 24\n    cidr: 10.66.0.0/16\n    ipipMode: Never\n"),
        "{pools}"
    );
    let configs = out_in(&run, "k-master", "calicoctl get bgpconfig default -o yaml");
    assert!(
        configs.ends_with("spec:\n  asNumber: 65000\n  logSeverityScreen: Info\n  nodeToNodeMeshEnabled: true\n  serviceClusterIPs:\n  - cidr: 10.96.0.0/12\n"),
        "{configs}"
    );
}

#[test]
fn named_objects_print_alone_or_as_a_sequence_and_missing_ones_as_calicoctl_errors() {
    let run = run_to("s4");
    let one = out_in(&run, "k-master", "calicoctl get node k-w1 -o json");
    assert!(
        one.starts_with("{\n  \"kind\": \"Node\",\n  \"apiVersion\": \"projectcalico.org/v3\","),
        "{one}"
    );
    let two = out_in(&run, "k-master", "calicoctl get nodes k-w1 k-w2 -o yaml");
    assert!(
        two.starts_with("- apiVersion: projectcalico.org/v3\n  kind: Node\n"),
        "{two}"
    );
    assert_eq!(two.matches("\n- apiVersion: ").count(), 1, "{two}");

    assert_eq!(
        out_in(&run, "k-master", "calicoctl get bgppeer nope -o yaml"),
        "null\nresource does not exist: BGPPeer(nope) with error: bgppeers.crd.projectcalico.org \"nope\" not found\n"
    );
    let mixed = out_in(&run, "k-master", "calicoctl get node gone k-w3");
    assert_eq!(
        mixed,
        "NAME   \nk-w3   \n\nresource does not exist: Node(gone) with error: nodes \"gone\" not found\n"
    );
    assert_eq!(
        out_in(&run, "k-master", "calicoctl get ippool -o xml"),
        "unrecognized output format 'xml'\n"
    );
    assert_eq!(
        out_in(&run, "k-master", "calicoctl get blockaffinity"),
        "Failed to get resources: resource type 'blockaffinity' is not supported\n"
    );
    assert_eq!(
        out_in(&run, "k-master", "calicoctl get ippool -n default -o yaml"),
        "null\nIPPool is not namespaced\n"
    );
    // A kind calicoctl has but fabsim's datastore does not hold is fabsim's limit, said so.
    let net = run.engine.network();
    let dev = net.device_by_name("k-master").expect("k-master");
    let limit = fabsim::views::run_command(net, run.engine.state(), dev, "calicoctl get felixconfig -o yaml");
    assert!(limit.is_err_and(|e| e.message.contains("fabsim's Calico datastore holds")));
}

/// seed-lab.md s1 (L593-618): `kubectl get ippools -o yaml`, without the metadata fabsim does
/// not model (the `projectcalico.org/metadata` annotation, resourceVersion, uid).
#[test]
fn kubectl_ippools_yaml_is_the_seed_lab_text_and_json_is_kubectls() {
    let seed = "apiVersion: v1
items:
- apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata:
generation: 1
name: default-ipv4-ippool
spec:
allowedUses:
- Workload
- Tunnel
blockSize: 26
cidr: 10.66.0.0/16
ipipMode: Always
natOutgoing: true
nodeSelector: all()
vxlanMode: Never
kind: List
metadata:
resourceVersion: \"\"";
    let run = run_to("s1");
    let yaml = out_in(&run, "k-master", "kubectl get ippools -o yaml");
    let ours: Vec<&str> = trimmed(&yaml)
        .into_iter()
        .filter(|l| !l.starts_with("creationTimestamp:"))
        .collect();
    assert_eq!(ours, trimmed(seed), "{yaml}");

    // kubectl's JSONPrinter indents by four; the seed's `jq '.items[0].spec'` (L1107-1120).
    let json = out_in(&run, "k-master", "kubectl get ippools -o json");
    assert!(
        json.starts_with("{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\n"),
        "{json}"
    );
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let seed_spec: serde_json::Value = serde_json::from_str(
        r#"{"allowedUses": ["Workload", "Tunnel"], "blockSize": 26, "cidr": "10.66.0.0/16",
            "ipipMode": "Always", "natOutgoing": true, "nodeSelector": "all()", "vxlanMode": "Never"}"#,
    )
    .expect("seed JSON");
    assert_eq!(parsed["items"][0]["spec"], seed_spec);
}
