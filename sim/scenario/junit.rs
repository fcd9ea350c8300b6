//! `fabsim run --junit FILE`: the run as JUnit XML, for CI systems that collect test reports.
//! One `<testsuite>` for the scenario, one `<testcase>` per expectation (classname = the step
//! id), a `<failure>` with the detail for each that failed. Times are virtual seconds, so the
//! file is as deterministic as the rest of the run.

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

use super::checks::serde_name;
use super::report::RunReport;
use super::run::{CheckResult, When};

/// The XML document (UTF-8, with its declaration).
pub fn junit_xml(report: &RunReport) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let tests = report.summary.expectations.to_string();
    let failures = report.summary.failed.to_string();
    let time = seconds(report.virtual_ms());
    // Writing to a Vec cannot fail; the `Result`s only carry I/O errors.
    let _ = write_all(&mut w, report, &tests, &failures, &time);
    let mut xml = String::from_utf8(w.into_inner()).unwrap_or_default();
    xml.push('\n');
    xml
}

fn write_all(
    w: &mut Writer<Vec<u8>>,
    report: &RunReport,
    tests: &str,
    failures: &str,
    time: &str,
) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let counts = [
        ("tests", tests),
        ("failures", failures),
        ("errors", "0"),
        ("time", time),
    ];
    let (scenario, file) = (xml_safe(report.scenario), xml_safe(report.file));
    let suites = BytesStart::new("testsuites").with_attributes([("name", scenario.as_str())]);
    w.write_event(Event::Start(suites.with_attributes(counts)))?;
    let suite = BytesStart::new("testsuite").with_attributes([("name", scenario.as_str()), ("file", file.as_str())]);
    w.write_event(Event::Start(suite.with_attributes(counts)))?;
    let (topology, seed) = (xml_safe(report.topology), report.seed.to_string());
    w.write_event(Event::Start(BytesStart::new("properties")))?;
    for (name, value) in [("topology", topology.as_str()), ("seed", seed.as_str())] {
        let prop = BytesStart::new("property").with_attributes([("name", name), ("value", value)]);
        w.write_event(Event::Empty(prop))?;
    }
    w.write_event(Event::End(BytesEnd::new("properties")))?;
    for step in report.all_steps() {
        for c in &step.checks {
            write_case(w, &step.id, c)?;
        }
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))?;
    w.write_event(Event::End(BytesEnd::new("testsuites")))?;
    Ok(())
}

fn write_case(w: &mut Writer<Vec<u8>>, step: &str, c: &CheckResult) -> std::io::Result<()> {
    // Checks taken before a step's change say so: the same expectation may appear in both
    // phases of one step.
    let name = match c.when {
        When::After => c.what.clone(),
        _ => format!("{}: {}", serde_name(c.when), c.what),
    };
    let (classname, name) = (xml_safe(step), xml_safe(&name));
    let case =
        BytesStart::new("testcase").with_attributes([("classname", classname.as_str()), ("name", name.as_str())]);
    if c.ok {
        return w.write_event(Event::Empty(case));
    }
    w.write_event(Event::Start(case))?;
    let message = xml_safe(c.detail.lines().next().unwrap_or("expectation failed"));
    let failure = BytesStart::new("failure").with_attributes([("message", message.as_str()), ("type", "expectation")]);
    w.write_event(Event::Start(failure))?;
    let body = xml_safe(&format!("at {}\n{}", c.span, c.detail));
    w.write_event(Event::Text(BytesText::new(&body)))?;
    w.write_event(Event::End(BytesEnd::new("failure")))?;
    w.write_event(Event::End(BytesEnd::new("testcase")))
}

/// XML 1.0 cannot carry most control characters even escaped (a command's output could hold
/// one); they become U+FFFD. Escaping of `<`, `&`, quotes is quick-xml's.
fn xml_safe(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}
