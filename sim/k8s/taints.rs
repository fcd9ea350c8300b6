//! Node taints and the pod tolerations fabsim knows: the `Taint` of a Node's `spec.taints`, the
//! `kubectl taint` spec syntax (`KEY[=VALUE]:EFFECT`, `KEY[:EFFECT]-`), and which pods tolerate
//! which taint.
//!
//! Parsing and texts follow kubectl v1.28 `pkg/cmd/taint/utils.go` (`parseTaint`,
//! `validateTaintEffect`) and `corev1.Taint.ToString`.

use std::fmt;

use super::cluster::{Owner, Pod};

/// The taint kubeadm puts on a control-plane node (`node-role.kubernetes.io/control-plane`).
pub const CONTROL_PLANE_KEY: &str = "node-role.kubernetes.io/control-plane";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl Effect {
    fn parse(s: &str) -> Result<Effect, String> {
        match s {
            "NoSchedule" => Ok(Effect::NoSchedule),
            "PreferNoSchedule" => Ok(Effect::PreferNoSchedule),
            "NoExecute" => Ok(Effect::NoExecute),
            other => Err(format!("invalid taint effect: {other}, unsupported taint effect")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::NoSchedule => "NoSchedule",
            Effect::PreferNoSchedule => "PreferNoSchedule",
            Effect::NoExecute => "NoExecute",
        }
    }

    /// Does the scheduler refuse an intolerant pod (PreferNoSchedule only lowers the score)?
    pub fn blocks_scheduling(self) -> bool {
        self != Effect::PreferNoSchedule
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: Effect,
}

impl Taint {
    fn no_schedule(key: &str) -> Taint {
        Taint {
            key: key.into(),
            value: String::new(),
            effect: Effect::NoSchedule,
        }
    }

    pub fn control_plane() -> Taint {
        Taint::no_schedule(CONTROL_PLANE_KEY)
    }

    /// The node lifecycle controller's taint on a node that is not Ready.
    pub fn not_ready() -> Taint {
        Taint::no_schedule("node.kubernetes.io/not-ready")
    }

    /// The node lifecycle controller's taint on a node whose kubelet stopped posting status
    /// (its Ready condition Unknown).
    pub fn unreachable() -> Taint {
        Taint::no_schedule("node.kubernetes.io/unreachable")
    }

    /// The node lifecycle controller's taint on a cordoned node (`spec.unschedulable`).
    pub fn unschedulable() -> Taint {
        Taint::no_schedule("node.kubernetes.io/unschedulable")
    }
}

/// `corev1.Taint.ToString`: `key=value:effect`, or `key:effect` without a value.
impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value.as_str() {
            "" => write!(f, "{}:{}", self.key, self.effect.as_str()),
            v => write!(f, "{}={v}:{}", self.key, self.effect.as_str()),
        }
    }
}

/// A taint to remove: a key, and the effect if given (`KEY-` removes every effect of the key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub key: String,
    pub effect: Option<Effect>,
}

impl fmt::Display for Removal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.effect {
            None => write!(f, "{}", self.key),
            Some(e) => write!(f, "{}:{}", self.key, e.as_str()),
        }
    }
}

/// One `kubectl taint` argument: a taint to add or one to remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaintArg {
    Add(Taint),
    Remove(Removal),
}

/// `parseTaints` for one argument. The error is kubectl's text (a usage error).
pub fn parse_arg(spec: &str) -> Result<TaintArg, String> {
    if let Some(rest) = spec.strip_suffix('-') {
        let (key, _, effect) = parse_taint(rest)?;
        return Ok(TaintArg::Remove(Removal { key, effect }));
    }
    match parse_taint(spec)? {
        (key, value, Some(effect)) => Ok(TaintArg::Add(Taint { key, value, effect })),
        (_, _, None) => Err(format!("invalid taint spec: {spec}")),
    }
}

/// `parseTaint`: `KEY=VALUE:EFFECT`, `KEY:EFFECT` or `KEY`. Keys are checked for the characters
/// a qualified name may hold; kubectl's full validation message for a bad key is not modelled,
/// only its first part.
fn parse_taint(st: &str) -> Result<(String, String, Option<Effect>), String> {
    let parts: Vec<&str> = st.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [key] => (key.to_string(), String::new(), None),
        [kv, effect] => {
            let effect = Effect::parse(effect)?;
            let kv: Vec<&str> = kv.split('=').collect();
            match kv.as_slice() {
                [k] => (k.to_string(), String::new(), Some(effect)),
                [k, v] => (k.to_string(), v.to_string(), Some(effect)),
                _ => return Err(format!("invalid taint spec: {st}")),
            }
        }
        _ => return Err(format!("invalid taint spec: {st}")),
    };
    let name = key.rsplit('/').next().unwrap_or("");
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || !key.chars().all(|c| ok(c) || c == '/') || !value.chars().all(ok) {
        return Err(format!("invalid taint spec: {st}"));
    }
    Ok((key, value, effect))
}

/// Does `pod` tolerate `taint`? fabsim knows these tolerations:
/// - DaemonSet pods tolerate every taint: kubeadm's kube-proxy has `operator: Exists`
///   (`cmd/kubeadm/app/phases/addons/proxy/manifests.go`) and calico-node tolerates every
///   NoSchedule and NoExecute taint (`operator: Exists` per effect in calico.yaml);
/// - static pods are the kubelet's own and are never scheduled or evicted through the API;
/// - other pods tolerate the control-plane taint if their spec says so (everything else in
///   a pod's `tolerations` is not read).
pub fn tolerates(pod: &Pod, taint: &Taint) -> bool {
    match pod.owner {
        Owner::DaemonSet(_) | Owner::Static => true,
        Owner::Deployment(_) | Owner::Bare => {
            pod.tolerates_control_plane && taint.key == CONTROL_PLANE_KEY && taint.effect == Effect::NoSchedule
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taint_specs_parse_as_kubectl_does() {
        let add = |s| match parse_arg(s) {
            Ok(TaintArg::Add(t)) => t.to_string(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(add("dedicated=db:NoSchedule"), "dedicated=db:NoSchedule");
        assert_eq!(add("maint:NoExecute"), "maint:NoExecute");
        assert_eq!(
            parse_arg("maint:NoExecute-"),
            Ok(TaintArg::Remove(Removal {
                key: "maint".into(),
                effect: Some(Effect::NoExecute)
            }))
        );
        assert_eq!(parse_arg("maint-").map(|_| ()), Ok(()));
        assert_eq!(
            parse_arg("maint:Sometimes"),
            Err("invalid taint effect: Sometimes, unsupported taint effect".into())
        );
        assert_eq!(parse_arg("maint"), Err("invalid taint spec: maint".into()));
        assert_eq!(
            parse_arg("a=b=c:NoSchedule"),
            Err("invalid taint spec: a=b=c:NoSchedule".into())
        );
    }
}
