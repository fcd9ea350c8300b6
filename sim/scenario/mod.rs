//! Scenarios: a topology plus runbook steps, each converged, diffed and checked against its
//! expectations.
