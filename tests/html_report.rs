//! `fabsim run --html` and `fabsim topo`: the page's structure against the same run's JSON report
//! (per-step sections, the s6 outage window, the s3a broken flows with their chains, cable and
//! session states in the drawings), nothing fetched, byte-identical reruns; the page in real
//! headless Chromium (scripts ran without errors, a screenshot that is not blank); and a page
//! that grows with racks, not with host pairs, on generated fabrics.
//!
//! Chromium is Debian's `chromium`; without it the browser test says so and passes, unless
//! `FABSIM_CHROMIUM=required` (CI sets it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::fabsim;
use serde_json::Value;

const SEED: &str = "scenarios/seed-lab.yaml";

/// This test's output folder under the target directory (honours CARGO_TARGET_DIR).
fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("test-output").join("html_report");
    std::fs::create_dir_all(&dir).expect("create the test output folder");
    dir
}

/// `fabsim run FILE --html OUT` (plus `--format json`): the page and the JSON report.
fn report(file: &str, html: &Path) -> (String, Value) {
    let o = fabsim(&[
        "run",
        file,
        "--format",
        "json",
        "--html",
        html.to_str().expect("utf-8 path"),
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "fabsim run {file}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json = serde_json::from_slice(&o.stdout).expect("the JSON report");
    (std::fs::read_to_string(html).expect("the HTML page"), json)
}

fn seed_report(name: &str) -> (String, Value) {
    report(SEED, &out_dir().join(name))
}

/// The step's section of the page.
fn section<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("id=\"step-{id}\""))
        .unwrap_or_else(|| panic!("no section for step {id}"));
    let end = page[start..].find("</section>").map_or(page.len(), |e| start + e);
    &page[start..end]
}

fn steps(json: &Value) -> Vec<&Value> {
    std::iter::once(&json["start"])
        .chain(json["steps"].as_array().expect("steps"))
        .collect()
}

fn step<'a>(json: &'a Value, id: &str) -> &'a Value {
    steps(json)
        .into_iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in the JSON"))
}

/// HTML-escaped as the page escapes text.
fn esc(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

#[test]
fn every_step_has_its_section_in_run_order() {
    let (page, json) = seed_report("sections.html");
    let mut at = 0;
    for s in steps(&json) {
        let id = s["id"].as_str().expect("id");
        let marker = format!("data-step=\"{id}\"");
        let found = page[at..].find(&marker).map(|i| at + i);
        at = found.unwrap_or_else(|| panic!("step {id}'s section missing or out of order"));
        let sec = section(&page, id);
        assert!(sec.contains("<svg"), "step {id} has no drawing");
        let reach = &s["reach"];
        if !reach.is_null() {
            assert!(
                sec.contains(&format!(
                    "{} of {} host/pod pairs answer",
                    reach["reachable"], reach["pairs"]
                )),
                "step {id}: reach counts"
            );
            assert!(sec.contains("class=\"heatmap\""), "step {id} has no heat map");
        }
    }
    assert_eq!(page.matches("<section class=\"step").count(), steps(&json).len());
}

#[test]
fn s6_outage_window_is_on_the_time_axis() {
    let (page, json) = seed_report("outage.html");
    let flows = step(&json, "s6-rollout")["flows"].as_array().expect("flows");
    let client = flows
        .iter()
        .find(|f| f["from"] == "client" && f["to"] == "10.66.111.1")
        .expect("the watched ping client -> 10.66.111.1");
    let outages = client["outages"].as_array().expect("outages");
    assert_eq!(outages.len(), 1, "{client}");
    let o = &outages[0];
    let sec = section(&page, "s6-rollout");
    let bar = format!(
        "class=\"outage\" data-from-ms=\"{}\" data-until-ms=\"{}\"",
        o["from_ms"], o["until_ms"]
    );
    assert!(sec.contains(&bar), "no outage bar `{bar}` in s6-rollout");
    assert_eq!(o["until_ms"].as_u64().unwrap() - o["from_ms"].as_u64().unwrap(), 5000);
    assert!(
        sec.contains("client → 10.66.111.1: unreachable for 5s (icmp_seq"),
        "{sec}"
    );
}

#[test]
fn s3a_broken_flows_come_with_their_chains() {
    let (page, json) = seed_report("broken.html");
    let sec = section(&page, "s3a");
    let broke = step(&json, "s3a")["reach"]["broke"].as_array().expect("broke");
    assert!(!broke.is_empty());
    for p in broke {
        let line = format!(
            "{} → {} ({}): {}",
            p["from"].as_str().unwrap(),
            p["to"].as_str().unwrap(),
            p["addr"].as_str().unwrap(),
            p["result"].as_str().unwrap()
        );
        assert!(sec.contains(&esc(&line)), "s3a: no broken pair `{line}`");
        let why = p["why"].as_array().expect("why");
        assert!(!why.is_empty(), "{line} has no chain");
        for hop in why {
            let text = hop.as_str().unwrap();
            let text = text.split_once(". ").map_or(text, |(_, t)| t);
            assert!(sec.contains(&format!("<li>{}</li>", esc(text))), "s3a: no hop `{text}`");
        }
    }
    // The README's example, as `fabsim explain` prints it.
    assert!(sec.contains("<li>Leaf-2 in Ethernet2: no route to 10.66.111.1 → ICMP net unreachable from 10.2.22.0</li>"));
}

#[test]
fn drawings_show_cable_and_session_states_per_step() {
    let (page, json) = seed_report("drawing.html");
    // Leaf-3's port to the client is an unconfigured switchport until s1b configures it.
    let cable = "Leaf-3:Ethernet3 - client:ens3";
    assert!(section(&page, "start").contains(&format!("{cable}: down at Leaf-3:Ethernet3")));
    assert!(section(&page, "s1b").contains(&format!("{cable}: up")));
    // Every session end of the fabric after s4, with its prefix counts, in the drawing.
    let sec = section(&page, "s4");
    let ends = step(&json, "s4")["fabric"]["sessions"].as_array().expect("sessions");
    let leaf1 = ends
        .iter()
        .find(|e| e["device"] == "Leaf-1" && e["peer"] == "BGP 10.0.11.1")
        .expect("Leaf-1's session to k-master");
    assert_eq!(leaf1["state"], "Established");
    assert_eq!(leaf1["peer_device"], "k-master");
    for e in ends.iter().filter(|e| !e["peer_device"].is_null()) {
        let tip = format!(
            "{} {}: {}, {} received, {} accepted",
            e["device"].as_str().unwrap(),
            e["peer"].as_str().unwrap(),
            e["state"].as_str().unwrap(),
            e["received"],
            e["accepted"]
        );
        assert!(sec.contains(&esc(&tip)), "s4 drawing lacks `{tip}`");
    }
    assert!(sec.contains("class=\"session up\""));
}

#[test]
fn the_page_fetches_nothing_and_is_deterministic() {
    let (a, _) = seed_report("det-a.html");
    let (b, _) = seed_report("det-b.html");
    assert!(a == b, "two runs gave different pages");
    for banned in [
        "<link",
        "<img",
        "<iframe",
        "src=",
        "url(",
        "@import",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!a.contains(banned), "the page contains `{banned}`");
    }
    // The only URL in an attribute is SVG's namespace name; links stay on the page.
    let attr = regex::Regex::new(r#"([\w-]+)="([^"]*)""#).unwrap();
    for c in attr.captures_iter(&a) {
        let (name, value) = (&c[1], &c[2]);
        if name == "xmlns" {
            assert_eq!(value, "http://www.w3.org/2000/svg");
        } else if name == "href" {
            assert!(value.starts_with('#'), "href={value}");
        } else {
            assert!(!value.contains("://"), "{name}={value}");
        }
    }
}

#[test]
fn topo_draws_what_the_report_draws() {
    let (page, _) = seed_report("topo.html");
    let o = fabsim(&["topo", SEED, "--step", "s4", "--format", "svg"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = String::from_utf8(o.stdout).expect("utf-8");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(
        section(&page, "s4").contains(svg.trim_end()),
        "topo's SVG differs from the report's s4 drawing"
    );

    let o = fabsim(&["topo", SEED, "--step", "s4", "--format", "dot"]);
    assert_eq!(o.status.code(), Some(0));
    let dot = String::from_utf8(o.stdout).expect("utf-8");
    assert!(dot.starts_with("graph \"the fabric after step s4\" {"));
    // Every device a node with a pinned position, the spine's cables as edges.
    for dev in [
        "Spine-1",
        "Leaf-1",
        "Leaf-2",
        "Leaf-3",
        "k-master",
        "k-w1",
        "k-w2",
        "k-w3",
        "client",
        "nat-cloud",
    ] {
        assert!(dot.contains(&format!("  \"{dev}\" [label=")), "no node {dev}");
    }
    assert_eq!(dot.matches("!\", fillcolor=").count(), 10);
    assert!(dot.contains("\"Spine-1\" -- \"Leaf-1\" [color=\"#2e7d32\""));

    let o = fabsim(&["topo", SEED, "--step", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no step 'nope'"));
}

/// A generated fabric with a scenario that powers off leaf-1: its rack's hosts lose everything.
fn generated_page(tag: &str, leaves: u32, per_leaf: u32) -> (PathBuf, String) {
    let dir = out_dir().join(format!("{tag}-2x{leaves}x{per_leaf}"));
    std::fs::create_dir_all(&dir).unwrap();
    let fabric = dir.join("fabric.yaml");
    // Paths under the target directory have no spaces.
    let cmd = format!(
        "gen leaf-spine --spines 2 --leaves {leaves} --nodes-per-leaf {per_leaf} --out {}",
        fabric.display()
    );
    let o = fabsim(&cmd.split(' ').collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let scn = dir.join("scenario.yaml");
    std::fs::write(
        &scn,
        "name: leaf-down\ntopology: fabric.yaml\nsteps:\n  - id: leaf-1-off\n    fail: {device: leaf-1}\n",
    )
    .unwrap();
    let html = dir.join("report.html");
    let (page, json) = report(scn.to_str().unwrap(), &html);
    assert!(
        !step(&json, "leaf-1-off")["reach"]["broke"]
            .as_array()
            .unwrap()
            .is_empty(),
        "powering off leaf-1 broke nothing"
    );
    (html, page)
}

#[test]
fn the_page_grows_with_racks_not_with_pairs() {
    let (_, base) = generated_page("size", 4, 16); // 70 devices, 64 hosts: 4,032 pairs
    let (_, bigger_racks) = generated_page("size", 4, 32); // 128 hosts: 16,256 pairs, same 4 racks
    let (_, more_racks) = generated_page("size", 8, 16); // 128 hosts: 16,256 pairs, 8 racks
    for page in [&base, &bigger_racks, &more_racks] {
        assert!(page.contains("class=\"rack\""), "a large fabric is drawn per rack");
        assert!(page.contains("data-by=\"rack\""), "its heat map is per rack");
        assert!(page.contains("… and "), "long lists are capped");
    }
    let (b, r, m) = (base.len() as f64, bigger_racks.len() as f64, more_racks.len() as f64);
    // Four times the pairs in the same racks: nearly the same page.
    assert!(r < b * 1.25, "base {b} bytes, 2x rack size {r} bytes");
    // Twice the racks (and four times the pairs): the page grows by the racks' share.
    assert!(m - b > r - b, "base {b}, 2x rack size {r}, 2x racks {m}");
}

/// Debian's chromium, or None (and why) when it is not installed and not required.
fn chromium() -> Option<&'static str> {
    let found = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("chromium");
    }
    assert!(
        std::env::var("FABSIM_CHROMIUM").as_deref() != Ok("required"),
        "FABSIM_CHROMIUM=required but `chromium` is not installed (apt-get install chromium)"
    );
    eprintln!("skipped: `chromium` is not installed (set FABSIM_CHROMIUM=required to fail instead)");
    None
}

/// Headless Chromium on `page` with `extra` flags; its stdout and stderr.
fn headless(browser: &str, page: &Path, profile: &Path, extra: &[&str]) -> (String, String) {
    let url = format!("file://{}", page.canonicalize().expect("page path").display());
    let o = Command::new("timeout")
        .arg("180")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("run chromium");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "chromium failed ({:?}): {err}", o.status);
    (out, err)
}

/// The page's own script left its marker, recorded no error, and the console logged none.
fn assert_scripts_ran(dom: &str, stderr: &str, sections: usize) {
    assert!(
        dom.contains(&format!("id=\"fabsim-ready\" data-steps=\"{sections}\"")),
        "the page's script did not finish"
    );
    assert!(
        dom.contains("<ul id=\"js-errors\" hidden=\"\"></ul>"),
        "script errors recorded on the page"
    );
    // One button per step, plus `all steps`.
    assert_eq!(dom.matches("<button").count(), sections + 1);
    assert_console_clean(stderr);
}

#[test]
fn renders_in_headless_chromium() {
    let Some(browser) = chromium() else { return };
    let dir = out_dir();
    let html = dir.join("seed-lab.html");
    let (page, json) = report(SEED, &html);
    let sections = steps(&json).len();
    assert_eq!(page.matches("<section class=\"step").count(), sections);
    let profile = dir.join("chromium-profile");
    let (dom, err) = headless(browser, &html, &profile, &["--dump-dom"]);
    assert_scripts_ran(&dom, &err, sections);
    assert!(dom.contains("id=\"step-s3a\"") && dom.contains("class=\"outage\""));

    let shot = dir.join("seed-lab.png");
    let _ = std::fs::remove_file(&shot);
    let (_, err) = headless(browser, &html, &profile, &[&format!("--screenshot={}", shot.display())]);
    assert_console_clean(&err);
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&shot).expect("the screenshot"),
    ));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG data");
    assert_eq!((info.width, info.height), (1400, 2000));
    let px = info.color_type.samples();
    let colours: std::collections::BTreeSet<&[u8]> = buf[..info.buffer_size()].chunks(px).map(|c| &c[..3]).collect();
    assert!(colours.len() > 16, "the screenshot is blank: {} colours", colours.len());

    // A fabric drawn per rack loads and runs its script too.
    let (gen, _) = generated_page("chromium", 4, 16);
    let (dom, err) = headless(browser, &gen, &profile, &["--dump-dom"]);
    assert_scripts_ran(&dom, &err, 2);
}

fn assert_console_clean(stderr: &str) {
    for l in stderr.lines() {
        assert!(!l.contains(":CONSOLE(") && !l.contains("Uncaught"), "console: {l}");
    }
}
