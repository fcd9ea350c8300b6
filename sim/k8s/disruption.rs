//! PodDisruptionBudgets (`policy/v1`): `kubectl apply|create|delete -f` of their manifests with
//! the apiserver's validation, the disruption controller's status, and the Eviction API's
//! verdict on a pod (k8s-cidr-migrations.md §2.4 step 4, §2.5 "stuck drains").
//!
//! From kubernetes' source: validation `pkg/apis/policy/validation/validation.go`
//! (`ValidatePodDisruptionBudgetSpec`: both fields set, `ValidatePositiveIntOrPercent`,
//! `IsNotMoreThan100Percent`) with apimachinery's `field.Error` texts; the status
//! `pkg/controller/disruption/disruption.go` (`getExpectedPodCount`, `getExpectedScale`,
//! `countHealthyPods`, `updatePdbStatus`, `failSafe`); the verdict
//! `pkg/registry/core/pod/storage/eviction.go` (`canIgnorePDB`, one PDB at most, an unready
//! pod evicted while the budget is met, `checkAndDecrement`'s 429).

use std::collections::BTreeMap;

use super::cluster::{Cluster, Owner, Pod, PodPhase};
use super::command::{string_map, CommandOutcome};
use crate::model::Network;

/// The 429 the Eviction API answers when a budget allows no disruption.
pub(super) const TOO_MANY_REQUESTS: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// The 500 for a pod that more than one budget selects.
const SEVERAL_BUDGETS: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// `minAvailable` or `maxUnavailable`: an intstr.IntOrString.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(i64),
    /// A string: valid when it is digits and `%` (kept as written for the messages).
    Str(String),
}

impl IntOrPercent {
    /// intstr's `GetScaledValueFromIntOrPercent(v, total, roundUp=true)`.
    fn scaled(&self, total: i64) -> i64 {
        match self {
            IntOrPercent::Int(n) => *n,
            IntOrPercent::Str(s) => {
                let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
                (pct * total + 99) / 100
            }
        }
    }

    /// As `kubectl get pdb` prints it (`IntOrString.String()`).
    pub fn shown(&self) -> String {
        match self {
            IntOrPercent::Int(n) => n.to_string(),
            IntOrPercent::Str(s) => s.clone(),
        }
    }

    /// Go's `%#v` of the value, as a `field.Invalid` error prints it (IntOrString's String()
    /// has a pointer receiver, so a value falls back to the struct).
    fn go_syntax(&self) -> String {
        match self {
            IntOrPercent::Int(n) => format!("intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:\"\"}}"),
            IntOrPercent::Str(s) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{s:?}}}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pdb {
    pub namespace: String,
    pub name: String,
    /// `spec.selector.matchLabels` (an empty selector selects nothing, as eviction.go says).
    pub selector: BTreeMap<String, String>,
    pub min_available: Option<IntOrPercent>,
    pub max_unavailable: Option<IntOrPercent>,
    pub created_ms: u64,
}

/// What the disruption controller writes into a budget's status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PdbStatus {
    pub current_healthy: i64,
    pub desired_healthy: i64,
    pub expected: i64,
    pub disruptions_allowed: i64,
}

impl Pdb {
    fn selects(&self, pod: &Pod) -> bool {
        let labels = pod.labels();
        pod.namespace == self.namespace
            && !self.selector.is_empty()
            && self
                .selector
                .iter()
                .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
    }
}

/// What the Eviction API answers for one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The pod may go (budget decremented, if one covers it).
    Evict,
    /// 429: the budget named allows no disruption now.
    TooManyRequests { pdb: String, allowed: i64 },
    /// Another error, as kubectl prints it.
    Refused(String),
}

impl Cluster {
    /// The disruption controller's status of `pdb`: the pods it selects (Terminating ones
    /// included in the count, never healthy), healthy = Running and Ready, expected from the
    /// integer `minAvailable` or from the controllers' scale. A Deployment's scale is its
    /// replica count (fabsim knows it as its pods not being deleted); a bare pod has no
    /// controller and counts for nothing; a DaemonSet or a mirror pod has no scale the
    /// controller can find, so its sync fails and `failSafe` allows no disruption.
    pub fn pdb_status(&self, pdb: &Pdb) -> PdbStatus {
        let pods: Vec<&Pod> = self.pods.iter().filter(|p| pdb.selects(p)).collect();
        let current_healthy = pods
            .iter()
            .filter(|p| p.deleted_ms.is_none() && self.pod_ready(p))
            .count() as i64;
        let expected_scale = || -> Option<i64> {
            let mut controllers: Vec<&str> = Vec::new();
            for p in &pods {
                match &p.owner {
                    Owner::Deployment(d) => controllers.push(d),
                    Owner::Bare => {}
                    Owner::DaemonSet(_) | Owner::Static => return None,
                }
            }
            controllers.sort();
            controllers.dedup();
            Some(
                controllers
                    .iter()
                    .map(|d| {
                        self.pods
                            .iter()
                            .filter(|p| {
                                p.namespace == pdb.namespace
                                    && p.deleted_ms.is_none()
                                    && p.owner == Owner::Deployment(d.to_string())
                            })
                            .count() as i64
                    })
                    .sum(),
            )
        };
        let (expected, desired_healthy) = match (&pdb.max_unavailable, &pdb.min_available) {
            (Some(max), _) => match expected_scale() {
                Some(e) => (e, (e - max.scaled(e)).max(0)),
                None => return PdbStatus::default(),
            },
            (None, Some(IntOrPercent::Int(n))) => (pods.len() as i64, *n),
            (None, Some(min)) => match expected_scale() {
                Some(e) => (e, min.scaled(e)),
                None => return PdbStatus::default(),
            },
            (None, None) => (0, 0),
        };
        let allowed = current_healthy - desired_healthy;
        PdbStatus {
            current_healthy,
            desired_healthy,
            expected,
            disruptions_allowed: if expected <= 0 || allowed <= 0 { 0 } else { allowed },
        }
    }

    /// Running, and Ready unless the scenario injected otherwise (what a Service's
    /// endpoints and a budget count alike).
    pub(super) fn pod_ready(&self, p: &Pod) -> bool {
        p.phase == PodPhase::Running
            && p.facts.as_ref().and_then(|f| f.ready.as_deref()).is_none_or(|r| {
                r.split_once('/')
                    .is_some_and(|(a, b)| a == b && a.parse::<u32>().is_ok_and(|n| n > 0))
            })
    }

    /// The Eviction API's answer for `pod` now, given the disruptions already granted since
    /// the controller last wrote each budget's status (`granted`, by budget name; an
    /// eviction decrements it, the controller's next sync recomputes it).
    pub(super) fn eviction_verdict(&self, pod: &Pod, granted: &BTreeMap<String, i64>) -> Verdict {
        // canIgnorePDB: a pending or already deleted pod is deleted without a budget check.
        if pod.phase == PodPhase::Pending || pod.deleted_ms.is_some() {
            return Verdict::Evict;
        }
        let covering: Vec<&Pdb> = self.pdbs.iter().filter(|b| b.selects(pod)).collect();
        let pdb = match covering.as_slice() {
            [] => return Verdict::Evict,
            [one] => *one,
            _ => return Verdict::Refused(SEVERAL_BUDGETS.into()),
        };
        let status = self.pdb_status(pdb);
        if !self.pod_ready(pod) && status.current_healthy >= status.desired_healthy && status.desired_healthy > 0 {
            return Verdict::Evict;
        }
        let allowed = status.disruptions_allowed - granted.get(&pdb.name).copied().unwrap_or(0);
        if allowed <= 0 {
            return Verdict::TooManyRequests {
                pdb: pdb.name.clone(),
                allowed: allowed.max(0),
            };
        }
        Verdict::Evict
    }

    /// The budget that covers `pod` (the one eviction consults).
    pub(super) fn pdb_for(&self, pod: &Pod) -> Option<&Pdb> {
        self.pdbs.iter().find(|b| b.selects(pod))
    }
}

/// A PodDisruptionBudget manifest, or the apiserver's refusal of it.
pub(super) struct PdbSpec {
    namespace: Option<String>,
    name: String,
    selector: BTreeMap<String, String>,
    min_available: Option<IntOrPercent>,
    max_unavailable: Option<IntOrPercent>,
}

/// The budgets of a manifest text: None when it holds no `kind: PodDisruptionBudget`; an
/// error when it mixes them with other kinds or a field fabsim cannot read.
pub(super) fn manifests(text: &str) -> Option<Result<Vec<PdbSpec>, String>> {
    let docs = super::command::documents_of_kind(text, "PodDisruptionBudget", "PodDisruptionBudgets")?;
    Some(docs.and_then(|docs| docs.iter().map(parse).collect()))
}

fn parse(doc: &serde_json::Value) -> Result<PdbSpec, String> {
    let name = doc
        .pointer("/metadata/name")
        .and_then(|v| v.as_str())
        .ok_or("PodDisruptionBudget manifest: metadata.name is missing")?
        .to_string();
    match doc.get("apiVersion").and_then(|v| v.as_str()) {
        Some("policy/v1") => {}
        other => {
            return Err(format!(
                "PodDisruptionBudget {name}: fabsim reads apiVersion policy/v1, not {}",
                other.unwrap_or("(none)")
            ))
        }
    }
    if doc.pointer("/spec/selector/matchExpressions").is_some() {
        return Err(format!(
            "PodDisruptionBudget {name}: fabsim reads spec.selector.matchLabels, not matchExpressions"
        ));
    }
    let int_or_percent = |key: &str| -> Result<Option<IntOrPercent>, String> {
        match doc.pointer(&format!("/spec/{key}")) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(IntOrPercent::Str(s.clone()))),
            Some(v) => v.as_i64().map(|n| Some(IntOrPercent::Int(n))).ok_or_else(|| {
                format!("PodDisruptionBudget {name}: spec.{key} is an integer or a percentage, not {v}")
            }),
        }
    };
    Ok(PdbSpec {
        namespace: doc
            .pointer("/metadata/namespace")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        min_available: int_or_percent("minAvailable")?,
        max_unavailable: int_or_percent("maxUnavailable")?,
        selector: string_map(doc, "/spec/selector/matchLabels"),
        name,
    })
}

/// `ValidatePodDisruptionBudgetSpec`'s errors, each as `field.Error.Error()` prints it.
fn validate(spec: &PdbSpec) -> Vec<String> {
    let mut errs = Vec::new();
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        // The bad value is the internal PodDisruptionBudgetSpec, printed with `%#v`: its
        // pointer fields show heap addresses that differ on every run, which fabsim elides.
        errs.push(
            "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc…), \
             Selector:(*v1.LabelSelector)(0xc…), MaxUnavailable:(*intstr.IntOrString)(0xc…), \
             UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: \
             minAvailable and maxUnavailable cannot be both set"
                .to_string(),
        );
    }
    for (key, value) in [
        ("minAvailable", &spec.min_available),
        ("maxUnavailable", &spec.max_unavailable),
    ] {
        match value {
            None => {}
            Some(IntOrPercent::Int(n)) if *n < 0 => {
                errs.push(format!(
                    "spec.{key}: Invalid value: {n}: must be greater than or equal to 0"
                ));
            }
            Some(IntOrPercent::Int(_)) => {}
            Some(v @ IntOrPercent::Str(s)) => {
                let digits = s
                    .strip_suffix('%')
                    .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
                match digits {
                    None => errs.push(format!(
                        "spec.{key}: Invalid value: {}: a valid percent string must be a numeric string followed by \
                         an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                        v.go_syntax()
                    )),
                    Some(d) if d.parse::<u64>().is_ok_and(|p| p > 100) => errs.push(format!(
                        "spec.{key}: Invalid value: {}: must not be greater than 100%",
                        v.go_syntax()
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    errs
}

/// `kubectl apply|create -f` of budgets: each one's line, in file order. An existing budget
/// is `configured` by apply (its spec is mutable since v1.15), `AlreadyExists` for create.
pub(super) fn apply(
    net: &mut Network,
    verb: &str,
    specs: Vec<PdbSpec>,
    namespace: &str,
    now: u64,
) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let (mut out, mut failed) = (String::new(), false);
    for spec in specs {
        let errs = validate(&spec);
        let name = spec.name.clone();
        if !errs.is_empty() {
            failed = true;
            let joined = match errs.as_slice() {
                [one] => one.clone(),
                many => format!("[{}]", many.join(", ")),
            };
            out += &format!("The PodDisruptionBudget \"{name}\" is invalid: {joined}\n");
            continue;
        }
        let pdb = Pdb {
            namespace: spec.namespace.unwrap_or_else(|| namespace.to_string()),
            name: spec.name,
            selector: spec.selector,
            min_available: spec.min_available,
            max_unavailable: spec.max_unavailable,
            created_ms: now,
        };
        match cluster
            .pdbs
            .iter_mut()
            .find(|b| b.namespace == pdb.namespace && b.name == pdb.name)
        {
            Some(_) if verb == "create" => {
                failed = true;
                out += &format!(
                    "Error from server (AlreadyExists): poddisruptionbudgets.policy \"{name}\" already exists\n"
                );
            }
            Some(old) => {
                let changed = Pdb {
                    created_ms: old.created_ms,
                    ..pdb
                };
                let word = if *old == changed { "unchanged" } else { "configured" };
                *old = changed;
                out += &format!("poddisruptionbudget.policy/{name} {word}\n");
            }
            None => {
                cluster.pdbs.push(pdb);
                out += &format!("poddisruptionbudget.policy/{name} created\n");
            }
        }
    }
    Ok(CommandOutcome {
        status: i32::from(failed),
        ..CommandOutcome::ok(out)
    })
}

/// `kubectl delete -f` of budgets: `… deleted`, or the NotFound of the file's object.
pub(super) fn delete(
    net: &mut Network,
    specs: &[PdbSpec],
    source: &str,
    namespace: &str,
) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let (mut out, mut failed) = (String::new(), false);
    for spec in specs {
        let ns = spec.namespace.as_deref().unwrap_or(namespace);
        let before = cluster.pdbs.len();
        cluster.pdbs.retain(|b| !(b.namespace == ns && b.name == spec.name));
        if cluster.pdbs.len() < before {
            out += &format!("poddisruptionbudget.policy \"{}\" deleted\n", spec.name);
        } else {
            failed = true;
            out += &format!(
                "Error from server (NotFound): error when deleting \"{source}\": poddisruptionbudgets.policy \"{}\" not found\n",
                spec.name
            );
        }
    }
    Ok(CommandOutcome {
        status: i32::from(failed),
        ..CommandOutcome::ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(min: Option<IntOrPercent>, max: Option<IntOrPercent>) -> PdbSpec {
        PdbSpec {
            namespace: None,
            name: "b".into(),
            selector: BTreeMap::from([("app".to_string(), "web".to_string())]),
            min_available: min,
            max_unavailable: max,
        }
    }

    #[test]
    fn percentages_round_up_as_the_controller_scales_them() {
        assert_eq!(IntOrPercent::Str("50%".into()).scaled(3), 2);
        assert_eq!(IntOrPercent::Str("10%".into()).scaled(3), 1);
        assert_eq!(IntOrPercent::Int(2).scaled(7), 2);
    }

    #[test]
    fn validation_gives_the_apiservers_field_errors() {
        assert!(validate(&spec(Some(IntOrPercent::Str("100%".into())), None)).is_empty());
        assert_eq!(
            validate(&spec(None, Some(IntOrPercent::Str("150%".into())))),
            [
                "spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: \
              must not be greater than 100%"
            ]
        );
        assert_eq!(
            validate(&spec(Some(IntOrPercent::Int(-1)), None)),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        let both = validate(&spec(Some(IntOrPercent::Int(1)), Some(IntOrPercent::Str("x".into()))));
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(both[0].ends_with("minAvailable and maxUnavailable cannot be both set"));
    }
}
