//! Runbook commands that change Calico's datastore: `kubectl apply|patch|delete` of the
//! `crd.projectcalico.org/v1` objects (the manifest install has no Calico API server, so
//! kubectl stores them as written) and `calicoctl apply|create|replace|patch|delete` of
//! `projectcalico.org/v3` ones (validated and defaulted by clientv3). Output lines are the
//! tools' own (`ippool.crd.projectcalico.org/NAME created`, `Successfully applied 1 'IPPool'
//! resource(s)`).

use super::command::{flag, CommandOutcome, Context};
use crate::calico::install::{Applied, Calico};
use crate::model::Network;

/// The Calico kinds kubectl can name, as (words kubectl accepts, plural resource).
const KINDS: &[(&[&str], &str)] = &[
    (&["ippool", "ippools", "ippools.crd.projectcalico.org"], "ippools"),
    (
        &[
            "blockaffinity",
            "blockaffinities",
            "blockaffinities.crd.projectcalico.org",
        ],
        "blockaffinities",
    ),
];

fn plural(word: &str) -> Option<&'static str> {
    KINDS.iter().find(|(words, _)| words.contains(&word)).map(|(_, p)| *p)
}

pub(super) fn is_calico_kind(word: &str) -> bool {
    plural(word).is_some()
}

fn calico(net: &mut Network) -> Result<&mut Calico, CommandOutcome> {
    net.cluster
        .as_deref_mut()
        .and_then(|c| c.calico.as_mut())
        .ok_or_else(|| {
            CommandOutcome::failed(
                "error: the server doesn't have a resource type \"ippools\" (Calico is not installed)\n",
            )
        })
}

/// `kubectl apply -f FILE|-` of Calico CRD objects.
pub(super) fn kubectl_apply(net: &mut Network, file: &str, ctx: &Context<'_>) -> Result<CommandOutcome, String> {
    if file.starts_with("http://") || file.starts_with("https://") {
        return Err(format!(
            "kubectl apply -f {file}: not a manifest fabsim knows (catalogue/manifests.yaml has: {})",
            crate::catalogue::manifest_urls().join(", ")
        ));
    }
    let (text, source) = ctx.read(file)?;
    // Without Calico's API server, the v3 API group does not exist for kubectl.
    if let Some(name) = v3_resource_name(&text) {
        return Ok(CommandOutcome::failed(format!(
            "error: resource mapping not found for name: \"{name}\" namespace: \"\" from \"{source}\": \
             no matches for kind \"IPPool\" in version \"projectcalico.org/v3\"\n\
             ensure CRDs are installed first\n"
        )));
    }
    let calico = match calico(net) {
        Ok(c) => c,
        Err(out) => return Ok(out),
    };
    match calico.apply_yaml(&text, &source, ctx.now) {
        // What the datastore skipped (a kind or apiVersion fabsim does not read) was not
        // applied: the runbook must hear it, not find it missing later.
        Ok((skipped, _)) if !skipped.is_empty() => Err(format!(
            "kubectl apply -f {file}: fabsim applies Pods, Deployments, Services, PodDisruptionBudgets, \
             the kube-proxy ConfigMap and Calico resources; not applied: {}",
            skipped.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
        )),
        Ok((_, applied)) => Ok(CommandOutcome::ok(
            applied
                .iter()
                .map(|a| {
                    format!(
                        "{}.crd.projectcalico.org/{} {}\n",
                        a.kind.to_ascii_lowercase(),
                        a.name,
                        a.outcome
                    )
                })
                .collect::<String>(),
        )),
        Err(e) => Ok(CommandOutcome::failed(format!("{e}\n"))),
    }
}

/// The name of the first `projectcalico.org/v3` resource in a YAML text, if any.
fn v3_resource_name(text: &str) -> Option<String> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(text).unwrap_or_default();
    docs.iter()
        .find(|d| d.get("apiVersion").and_then(|v| v.as_str()) == Some("projectcalico.org/v3"))
        .map(|d| {
            d.pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or("")
                .to_string()
        })
}

/// `kubectl patch ippool NAME --type=merge -p JSON`.
pub(super) fn kubectl_patch(
    net: &mut Network,
    kind: &str,
    name: &str,
    rest: &[&str],
) -> Result<CommandOutcome, String> {
    if plural(kind) != Some("ippools") {
        return Err(format!(
            "kubectl patch {kind}: fabsim patches ippools (pods and deployments are not modelled yet)"
        ));
    }
    let kind_type = flag(rest, "--type").unwrap_or("strategic");
    if kind_type != "merge" {
        return Ok(CommandOutcome::failed(
            "error: strategic merge patch is not supported for custom resources; use --type=merge\n",
        ));
    }
    let patch = flag(rest, "-p")
        .or_else(|| flag(rest, "--patch"))
        .ok_or("kubectl patch: give the patch with -p JSON")?;
    patch_pool(net, name, patch, "crd.projectcalico.org/v1", |name| {
        format!("ippool.crd.projectcalico.org/{name} patched\n")
    })
}

/// JSON merge patch (RFC 7386) of a pool, stored through the same path as `apply`.
fn patch_pool(
    net: &mut Network,
    name: &str,
    patch: &str,
    api: &str,
    done: impl Fn(&str) -> String,
) -> Result<CommandOutcome, String> {
    let calico = match calico(net) {
        Ok(c) => c,
        Err(out) => return Ok(out),
    };
    let Some(doc) = calico.pool_json(name, api) else {
        return Ok(CommandOutcome::failed(format!(
            "Error from server (NotFound): ippools.crd.projectcalico.org \"{name}\" not found\n"
        )));
    };
    merge_and_store(calico, doc, patch, &done(name))
}

/// Apply the JSON merge `patch` to `doc` and store the result through the datastore's own
/// reader (JSON is YAML), as the API server would; `done` is what the tool prints.
fn merge_and_store(
    calico: &mut Calico,
    mut doc: serde_json::Value,
    patch: &str,
    done: &str,
) -> Result<CommandOutcome, String> {
    let patch: serde_json::Value = match serde_json::from_str(patch) {
        Ok(p) => p,
        Err(e) => {
            return Ok(CommandOutcome::failed(format!(
                "error: unable to parse \"{patch}\": {e}\n"
            )))
        }
    };
    merge(&mut doc, &patch);
    // A patch creates nothing, so no creation time is recorded.
    match calico.apply_yaml(&doc.to_string(), "patch", 0) {
        Ok(_) => Ok(CommandOutcome::ok(done)),
        Err(e) => Ok(CommandOutcome::failed(format!("{e}\n"))),
    }
}

/// RFC 7386: objects merge key by key, `null` deletes, anything else replaces.
fn merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = serde_json::Value::Object(serde_json::Map::new());
    }
    if let Some(obj) = target.as_object_mut() {
        for (k, v) in fields {
            if v.is_null() {
                obj.remove(k);
            } else {
                merge(obj.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
    }
}

/// `kubectl delete ippool NAME` / `kubectl delete blockaffinities NAME|--all`.
pub(super) fn kubectl_delete(net: &mut Network, kind: &str, rest: &[&str]) -> Result<CommandOutcome, String> {
    let calico = match calico(net) {
        Ok(c) => c,
        Err(out) => return Ok(out),
    };
    let all = rest.contains(&"--all");
    let names: Vec<&str> = rest.iter().copied().filter(|a| !a.starts_with('-')).collect();
    match plural(kind) {
        Some("ippools") => {
            let mut out = String::new();
            for n in &names {
                if calico.delete_pool(n) {
                    out.push_str(&format!("ippool.crd.projectcalico.org \"{n}\" deleted\n"));
                } else {
                    return Ok(CommandOutcome::failed(format!(
                        "{out}Error from server (NotFound): ippools.crd.projectcalico.org \"{n}\" not found\n"
                    )));
                }
            }
            Ok(CommandOutcome::ok(out))
        }
        _ => {
            let deleted = if all {
                calico.delete_affinities(None)
            } else {
                names.iter().flat_map(|n| calico.delete_affinities(Some(n))).collect()
            };
            Ok(CommandOutcome::ok(
                deleted
                    .iter()
                    .map(|n| format!("blockaffinity.crd.projectcalico.org \"{n}\" deleted\n"))
                    .collect::<String>(),
            ))
        }
    }
}

/// `calicoctl apply|create|replace -f FILE|-`, `calicoctl patch ippool NAME -p JSON`,
/// `calicoctl delete ippool NAME`.
pub(super) fn calicoctl(net: &mut Network, args: &[&str], ctx: &Context<'_>) -> Result<CommandOutcome, String> {
    match args {
        [verb @ ("apply" | "create" | "replace"), "-f", file, ..] => {
            let (text, source) = ctx.read(file)?;
            let calico = match calico(net) {
                Ok(c) => c,
                Err(out) => return Ok(out),
            };
            match calico.apply_yaml(&text, &source, ctx.now) {
                Ok((_, applied)) => Ok(CommandOutcome::ok(applied_line(verb, &applied))),
                Err(e) => Ok(CommandOutcome::failed(format!("Failed to {verb} resources: {e}\n"))),
            }
        }
        ["patch", kind, name, rest @ ..] if plural(kind) == Some("ippools") => {
            let patch = flag(rest, "-p")
                .or_else(|| flag(rest, "--patch"))
                .ok_or("calicoctl patch: give --patch JSON")?;
            patch_pool(net, name, patch, "projectcalico.org/v3", |_| {
                "Successfully patched 1 'IPPool' resource\n".to_string()
            })
        }
        ["patch", "bgpconfig" | "bgpconfigs" | "bgpconfiguration" | "bgpconfigurations", name, rest @ ..] => {
            let patch = flag(rest, "-p")
                .or_else(|| flag(rest, "--patch"))
                .ok_or("calicoctl patch: give --patch JSON")?;
            let calico = match calico(net) {
                Ok(c) => c,
                Err(out) => return Ok(out),
            };
            let Some(doc) = calico.bgpconfig_json(name) else {
                return Ok(CommandOutcome::failed(format!(
                    "Failed to patch 'BGPConfiguration' resource: resource does not exist: BGPConfiguration({name})\n"
                )));
            };
            merge_and_store(
                calico,
                doc,
                patch,
                "Successfully patched 1 'BGPConfiguration' resource\n",
            )
        }
        ["delete", kind, name, ..] if plural(kind) == Some("ippools") => {
            let calico = match calico(net) {
                Ok(c) => c,
                Err(out) => return Ok(out),
            };
            if calico.delete_pool(name) {
                Ok(CommandOutcome::ok("Successfully deleted 1 'IPPool' resource(s)\n"))
            } else {
                Ok(CommandOutcome::failed(format!(
                    "Failed to delete 'IPPool' resource: resource does not exist: IPPool({name})\n"
                )))
            }
        }
        _ => Err(format!(
            "`calicoctl {}`: fabsim changes Calico with calicoctl apply|create|replace -f, patch ippool, delete ippool",
            args.join(" ")
        )),
    }
}

/// calicoctl's summary: `Successfully applied 1 'IPPool' resource(s)`, naming the kind when
/// there is one.
fn applied_line(verb: &str, applied: &[Applied]) -> String {
    let past = match verb {
        "create" => "created",
        "replace" => "replaced",
        _ => "applied",
    };
    let mut kinds: Vec<&str> = applied.iter().map(|a| a.kind).collect();
    kinds.dedup();
    match kinds.as_slice() {
        [one] => format!("Successfully {past} {} '{one}' resource(s)\n", applied.len()),
        _ => format!("Successfully {past} {} resource(s)\n", applied.len()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn merge_patch() {
        let mut doc = serde_json::json!({"spec": {"disabled": false, "cidr": "10.0.0.0/8"}});
        super::merge(&mut doc, &serde_json::json!({"spec": {"disabled": true, "cidr": null}}));
        assert_eq!(doc, serde_json::json!({"spec": {"disabled": true}}));
    }
}
