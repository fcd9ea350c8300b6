//! The `fabsim` command line (clap): a thin layer over the library. Renders diagnostics and
//! maps outcomes to exit codes: 0 success, 1 a failed expectation, 2 bad input.

mod explain;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{ColorChoice, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use crate::dataplane::{probe, ProbeKind, ProbeOutcome};
use crate::diag::{Diagnostic, InputError};
use crate::gen;
use crate::model::IfId;
use crate::model::{DeviceKind, Network};
use crate::scenario::junit::junit_xml;
use crate::scenario::report::{RunReport, DEFAULT_SEED};
use crate::scenario::{self, describe_probe, resolve_target, Opened, Run};
use crate::views;
use crate::views::tcpdump::Sent;
use crate::wire::{self, Frame};

/// Threads `run --seeds` replays on (the machines fabsim is built on have 2 cores; the report
/// does not depend on it).
const SEEDS_THREADS: usize = 2;

#[derive(Parser, Debug)]
#[command(
    name = "fabsim",
    version,
    about = "Rehearse data-center fabric changes before touching real hardware"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Stop a convergence run with a finding when its routing tables would take more than this
    /// many MiB (default: half the machine's memory), instead of being killed by the system.
    #[arg(long, global = true, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    max_memory: Option<u64>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

/// `fabsim topo`'s output formats.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Drawing {
    /// A standalone SVG image.
    Svg,
    /// Graphviz DOT with the positions pinned (`neato -n2 -Tpng`).
    Dot,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a command on a device as its CLI or shell would (EOS `show …`, Linux `ip route`, `ping`…).
    Show {
        /// A topology or scenario file.
        file: PathBuf,
        /// Use the state after this scenario step (default: the end of the scenario).
        #[arg(long)]
        step: Option<String>,
        device: String,
        command: String,
    },
    /// Ping TO (an address or a device) from device FROM.
    Ping {
        file: PathBuf,
        #[arg(long)]
        step: Option<String>,
        from: String,
        to: String,
        /// Number of echo requests.
        #[arg(short = 'c', long, default_value_t = 5)]
        count: u32,
        /// Also print what `tcpdump -n -i IF` on DEVICE shows during the ping (repeatable).
        #[arg(long, value_name = "DEVICE:IF")]
        capture: Vec<String>,
        /// Write every packet of the ping that crossed DEVICE's interface IF to FILE as a pcap
        /// (Ethernet; virtual time; repeatable).
        #[arg(long, value_name = "DEVICE:IF=FILE")]
        pcap: Vec<String>,
    },
    /// Trace the path from FROM to TO (`traceroute -n`).
    Traceroute {
        file: PathBuf,
        #[arg(long)]
        step: Option<String>,
        from: String,
        to: String,
        /// Write every probe and answer that crossed DEVICE's interface IF to FILE as a pcap
        /// (repeatable).
        #[arg(long, value_name = "DEVICE:IF=FILE")]
        pcap: Vec<String>,
    },
    /// Reachability between every pair of hosts.
    Reach {
        file: PathBuf,
        #[arg(long)]
        step: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Every device's forwarding table.
    Routes {
        file: PathBuf,
        #[arg(long)]
        step: Option<String>,
        #[arg(long)]
        device: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
    },
    /// Every parse warning of FILE (a topology, scenario or containerlab `*.clab.yml`), of a
    /// snapshot directory (its inferred links too) or of every such input under DIR: the
    /// lines fabsim does not model, and why.
    ///
    /// Exit status: 0 (also with warnings), 2 when a file has errors.
    Lint {
        path: PathBuf,
        /// Also list the keywords each input format reads and ignores by design.
        #[arg(long)]
        verbose: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The normalized, vendor-independent model of every device (configuration, not state).
    Dump {
        file: PathBuf,
        #[arg(long)]
        step: Option<String>,
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
    },
    /// Replay a scenario step by step: changes, convergence, route changes, expectations.
    ///
    /// Exit status: 0 every expectation held, 1 some failed, 2 bad input.
    Run {
        scenario: PathBuf,
        /// Stop after this step.
        #[arg(long, visible_alias = "step", value_name = "STEP")]
        until: Option<String>,
        /// `text`: the readable report; `json`: the whole run as one JSON document
        /// (docs/report-schema.md).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also write the expectations as JUnit XML to FILE (one testcase per expectation).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Also write the report as one self-contained HTML page to FILE: the fabric drawn per
        /// step, the timeline, the reachability heat maps, outage windows, broken flows.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Seed for the run's random choices (BIRD's timer jitter), printed in the report. The
        /// same seed gives the same run, byte for byte.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        /// Replay under N seeds (`--seed` onwards: 1..=N by default) and report every step whose
        /// converged forwarding tables differ between seeds (races), with the distinct outcomes
        /// and how many seeds reached each. Exit status 1 names the seeds whose expectations
        /// failed.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        seeds: Option<u64>,
        /// Colour the text report: `auto` when stdout is a terminal.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
        /// List every route change and every broken pair's decision chain (the text report
        /// otherwise summarises large steps).
        #[arg(long, short = 'v')]
        verbose: bool,
        /// Write the BGP sessions' TCP segments (OPEN, UPDATE, KEEPALIVE, NOTIFICATION) that
        /// crossed DEVICE's interface IF during the run to FILE as a pcap (repeatable).
        #[arg(long, value_name = "DEVICE:IF=FILE")]
        pcap: Vec<String>,
    },
    /// Explain one flow hop by hop: each device's forwarding decision (matched prefix,
    /// protocol, next hop, interface), encapsulation and NAT, and where the packet ends.
    ///
    /// FROM is a device or a pod (NAMESPACE/NAME); TO an address or a device. Exit status 0
    /// when the flow is answered, 1 when it is not, 2 on bad input.
    Explain {
        file: PathBuf,
        /// Use the state after this scenario step (default: the end of the scenario).
        #[arg(long)]
        step: Option<String>,
        /// Explain a TCP connection to this port (a SYN) instead of an ICMP echo — what a
        /// Service's ClusterIP answers (kube-proxy DNATs TCP and UDP only).
        #[arg(long, conflicts_with = "udp")]
        tcp: Option<u16>,
        /// Explain a UDP datagram to this port instead of an ICMP echo.
        #[arg(long)]
        udp: Option<u16>,
        from: String,
        to: String,
    },
    /// Expose one simulated device's BGP session to a real BGP speaker over TCP: the real speaker
    /// takes the place of DEVICE's neighbour with remote AS ASN; the simulation runs live
    /// (virtual time paced to the wall clock) and prints what changes. Ends after --duration,
    /// or at Ctrl-C / SIGTERM, with DEVICE's `show ip bgp` (or BIRD's `show route`).
    Peer {
        /// A topology or scenario file.
        file: PathBuf,
        /// Start from the state after this scenario step (default: the end of the scenario).
        #[arg(long)]
        step: Option<String>,
        #[arg(long)]
        device: String,
        /// The address to accept the real speaker's connection on (e.g. 127.0.0.1:1179).
        #[arg(long, value_name = "ADDR:PORT")]
        listen: std::net::SocketAddr,
        /// The real speaker's AS: chooses which of DEVICE's neighbours it replaces.
        #[arg(long, value_name = "ASN")]
        as_peer: u32,
        /// The neighbour address, when several neighbours have that AS.
        #[arg(long, value_name = "IP")]
        neighbor: Option<std::net::Ipv4Addr>,
        /// Stop after this many seconds of wall-clock time.
        #[arg(long, value_name = "SECS")]
        duration: Option<u64>,
    },
    /// Draw the topology (devices, cables, BGP sessions) in its state after a step, as the
    /// HTML report draws it.
    Topo {
        file: PathBuf,
        /// Use the state after this scenario step (default: the end of the scenario).
        #[arg(long)]
        step: Option<String>,
        #[arg(long, value_enum, default_value_t = Drawing::Svg)]
        format: Drawing,
    },
    /// Calico IPAM as Calico computes it.
    Ipam {
        #[command(subcommand)]
        command: IpamCommand,
    },
    /// Write the network at a step as a lab of real daemons (FRR for EOS switches, BIRD on
    /// hosts): per-switch `frr.conf`, per-host BIRD files, network-namespace scripts
    /// (`up.sh`/`down.sh`) or a containerlab topology; or as a snapshot directory
    /// (`configs/*.cfg`, `hosts/*.yaml`, `links.yaml`, `fabsim.yaml`) that `fabsim … DIR` reads
    /// back. What the lab cannot reproduce (IPIP…) is printed on stderr and written into the files.
    Export {
        /// A topology (the converged start) or a scenario (replayed to --step, default its end).
        file: PathBuf,
        #[arg(long)]
        step: Option<String>,
        #[arg(long, value_enum)]
        to: ExportTarget,
        /// Directory to write into (created if needed).
        #[arg(long)]
        out: PathBuf,
        /// Names the lab's namespaces/containers (`PREFIX-DEVICE`) and its run directory
        /// /run/fabsim/PREFIX.
        #[arg(long, default_value = "fabsim")]
        prefix: String,
        /// Short timers in the exported configs only (OSPF hello 1/dead 4, BGP keepalive
        /// 1/hold 3, connect retry 1) so a test lab converges in seconds.
        #[arg(long)]
        fast_timers: bool,
        /// containerlab: EOS switches as FRR containers (runs without a cEOS image) or as cEOS
        /// nodes with their startup-config and a `lab.fabsim.yaml` side file (reads back as
        /// the same network).
        #[arg(long, value_enum, default_value = "frr")]
        switches: ExportSwitches,
    },
    /// Plan pod IP capacity before it runs out: node pools' subnets, thresholds, node ranges.
    Plan {
        #[command(subcommand)]
        command: PlanCommand,
    },
    /// Generate a topology file (ordinary fabsim input).
    Gen {
        #[command(subcommand)]
        command: GenCommand,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum ExportSwitches {
    Frr,
    Ceos,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum ExportTarget {
    Frr,
    Bird,
    Netns,
    Containerlab,
    Snapshot,
}

#[derive(Subcommand, Debug)]
enum GenCommand {
    /// A leaf-spine fabric of Arista EOS switches with a Kubernetes/Calico node cluster.
    #[command(after_help = gen::PLAN)]
    LeafSpine {
        #[command(flatten)]
        plan: gen::LeafSpine,
        /// Write the topology here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum PlanCommand {
    /// What node pools need at their maximum scale and how their subnets fare: raw demand,
    /// the need with the warm-pool buffer, the smallest subnet that holds it, utilisation,
    /// headroom, the node counts at which 70 % and 85 % are crossed, and the verdict.
    ///
    /// One pool from the flags, or several from --pools FILE; --supernet carves their subnets.
    #[command(after_help = PLAN_PODS_HELP)]
    Pods(Box<PodsArgs>),
    /// Max nodes and pods per node of an overlay cluster CIDR cut into per-node ranges
    /// (kube-controller-manager --cluster-cidr / --node-cidr-mask-size).
    NodeCidr {
        /// The cluster's pod CIDR, e.g. 10.244.0.0/16.
        #[arg(long)]
        cluster_cidr: String,
        /// --node-cidr-mask-size, e.g. 24.
        #[arg(long)]
        mask: u8,
        /// kubelet maxPods (default: kubelet's 110).
        #[arg(long)]
        max_pods: Option<u32>,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

const PLAN_PODS_HELP: &str = "\
Statuses: OK below 70%, WATCH from 70%, EMERGENCY (pause autoscaling) from 85%, EXHAUSTED past \
100%; the autoscaler guard is flagged from 80%. A pools file (YAML):
  supernet: 10.20.0.0/16      # optional
  buffer_pct: 30              # optional defaults: buffer_pct, reserved
  pools:
    - {name: core, max_pods: 40, nodes: 30}
    - {name: data, max_pods: 20, nodes: 10, subnet: 10.20.8.0/24}
Pool keys: the flags' names with '_' (max_pods, nodes, buffer_pct, reserved, nic_ip_limit, nics, \
warm_per_node, subnet, in_use, dedicated_pct, zones, cluster_cidr, node_mask).";

/// `fabsim plan pods`'s flags (one pool).
#[derive(clap::Args, Debug)]
struct PodsArgs {
    /// Several pools from a YAML file instead of the one-pool flags below.
    #[arg(long, conflicts_with_all = [
        "name", "max_pods", "nodes", "buffer_pct", "reserved", "nic_ip_limit", "nics",
        "warm_per_node", "subnet", "in_use", "dedicated_pct", "zones", "cluster_cidr", "node_mask",
    ])]
    pools: Option<PathBuf>,
    /// The pool's name in the output.
    #[arg(long)]
    name: Option<String>,
    /// kubelet maxPods per node.
    #[arg(long)]
    max_pods: Option<u32>,
    /// The pool's maximum node count.
    #[arg(long)]
    nodes: Option<u32>,
    /// Warm-pool / CNI headroom on top of the raw demand [default: 30].
    #[arg(long)]
    buffer_pct: Option<u32>,
    /// Unusable addresses per subnet [default: 4, cloud-reserved; 2 for an overlay node range].
    #[arg(long)]
    reserved: Option<u32>,
    /// Secondary IPs per NIC (clouds that cap them).
    #[arg(long)]
    nic_ip_limit: Option<u32>,
    /// NICs per node [default: 1].
    #[arg(long)]
    nics: Option<u32>,
    /// IPs each node really holds (its warm pool), for occupancy [default: maxPods].
    #[arg(long)]
    warm_per_node: Option<u32>,
    /// Evaluate this subnet: a CIDR (10.20.0.0/21) or a size (/21).
    #[arg(long)]
    subnet: Option<String>,
    /// Addresses allocated now, for the status.
    #[arg(long)]
    in_use: Option<u64>,
    /// Size the pool's own subnet for this share of the need; the rest borrows from a shared
    /// buffer [default: 100].
    #[arg(long)]
    dedicated_pct: Option<u32>,
    /// Zonal subnets, each carrying the whole pool [default: 1].
    #[arg(long)]
    zones: Option<u32>,
    /// Overlay mode: the cluster's pod CIDR ...
    #[arg(long, requires = "node_mask")]
    cluster_cidr: Option<String>,
    /// ... and its per-node mask.
    #[arg(long, requires = "cluster_cidr")]
    node_mask: Option<u8>,
    /// Carve the pools' subnets out of this CIDR.
    #[arg(long)]
    supernet: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Subcommand, Debug)]
enum IpamCommand {
    /// Which block each NODE claims in an empty pool, printed as `NODE BLOCK`.
    ///
    /// Each NODE argument asks for one more block for that node (its earlier blocks count as
    /// full); a repeated name asks for its next block; earlier arguments claim first. For
    /// one-address blocks (/32, /128) Calico seeds from the clock; fabsim keeps the name seed.
    Blocks {
        /// The IP pool's CIDR (IPv4 or IPv6), e.g. 10.66.0.0/16.
        #[arg(long)]
        pool: String,
        /// The pool's blockSize (IPv4 20-32, IPv6 116-128).
        #[arg(long)]
        block_size: u8,
        /// Node names (Kubernetes node names, byte for byte).
        #[arg(required = true)]
        nodes: Vec<String>,
    },
}

/// Errors the CLI reports, with their exit codes.
enum Failure {
    Input(InputError),
    Usage(String),
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(e)
    }
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Self {
        Failure::Input(d.into())
    }
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    if let Some(mib) = cli.max_memory {
        crate::engine::set_memory_limit(mib.saturating_mul(1 << 20));
    }
    let mut out = String::new();
    let code = match execute(cli.command, &mut out) {
        Ok(code) => code,
        Err(Failure::Input(e)) => {
            eprintln!("{e}");
            2
        }
        Err(Failure::Usage(msg)) => {
            eprintln!("fabsim: {msg}");
            2
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    code
}

/// `fabsim lint` as a table: where, the line as written, why it is not modelled.
fn lint_text(items: &[scenario::lint::LintItem], ignored: &[scenario::lint::IgnoredItem]) -> String {
    let mut s = String::new();
    if items.is_empty() {
        s.push_str("no warnings: every line is modelled or ignored by design\n");
    } else {
        let rows: Vec<(String, &str, &str)> = items
            .iter()
            .map(|i| (format!("{}:{}", i.file, i.line), i.text.as_str(), i.why.as_str()))
            .collect();
        let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(4);
        let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(4);
        s.push_str(&format!("{:<w0$}  {:<w1$}  WHY NOT MODELLED\n", "FILE:LINE", "TEXT"));
        for (at, text, why) in rows {
            s.push_str(&format!("{at:<w0$}  {text:<w1$}  {why}\n"));
        }
        s.push_str(&format!("{} warning(s)\n", items.len()));
    }
    if !ignored.is_empty() {
        s.push_str("\nignored by design (understood, no routing effect):\n");
        for i in ignored {
            s.push_str(&format!(
                "  {:<13} {:<18} {:<24} {}\n",
                i.format, i.context, i.keyword, i.why
            ));
        }
    }
    s
}

/// Open a file and replay it to the requested step; warnings, and the steps that ended before
/// the network settled, go to stderr.
fn state_at(file: &std::path::Path, step: Option<&str>) -> Result<(Opened, Run), Failure> {
    let opened = scenario::open(file)?;
    let run = scenario::run_seeded(&opened, step, DEFAULT_SEED)?;
    print_warnings(&run);
    print_unsettled(&run);
    Ok((opened, run))
}

/// A one-shot command shows the state where the replay stopped. When a step's run ended before
/// the network settled (its event budget, the memory guard, an oscillation, the run's
/// deadline), that state is a moment of a convergence, not its end — a half-built table read
/// as converged is the surprise this prevents — so each such step is named, with its findings.
fn print_unsettled(run: &Run) {
    for s in std::iter::once(&run.start).chain(&run.steps).filter(|s| !s.quiet) {
        eprintln!(
            "fabsim: warning: step '{}' ended before the network settled; what follows shows the state where it stopped",
            s.id
        );
        for f in &s.findings {
            eprintln!("  FINDING {f}");
        }
    }
}

fn print_warnings(run: &Run) {
    for w in run
        .start
        .warnings
        .iter()
        .chain(run.steps.iter().flat_map(|s| s.warnings.iter()))
    {
        eprintln!("{w}");
    }
}

fn device(net: &Network, name: &str) -> Result<crate::model::DeviceId, Failure> {
    net.device_by_name(name).ok_or_else(|| {
        let known: Vec<&str> = net.devices.iter().map(|d| d.name.as_str()).collect();
        Failure::Usage(format!("unknown device '{name}' (devices: {})", known.join(", ")))
    })
}

/// A `--capture DEVICE:IF` argument: a device and one of its interfaces.
fn capture_point(net: &Network, flag: &str, arg: &str) -> Result<(crate::model::DeviceId, IfId), Failure> {
    let (dev_name, if_name) = arg
        .split_once(':')
        .ok_or_else(|| Failure::Usage(format!("{flag} '{arg}': expected DEVICE:INTERFACE (e.g. k-w3:ens5)")))?;
    let dev = device(net, dev_name)?;
    let iface = net.iface_by_name(dev, if_name).ok_or_else(|| {
        Failure::Usage(format!(
            "{flag} '{arg}': {dev_name} has no interface '{if_name}' (interfaces: {})",
            net.iface_names(dev)
        ))
    })?;
    Ok((dev, iface))
}

/// `--pcap DEVICE:IF=FILE` arguments: the interfaces and the files their captures go to. A
/// tunnel device carries no Ethernet frames: its packets are captured on the interface that
/// carries the tunnel.
fn pcap_points(net: &Network, args: &[String]) -> Result<Vec<(IfId, PathBuf)>, Failure> {
    args.iter()
        .map(|arg| {
            let (point, file) = arg.split_once('=').ok_or_else(|| {
                Failure::Usage(format!(
                    "--pcap '{arg}': expected DEVICE:INTERFACE=FILE (e.g. k-w3:ens5=s1.pcap)"
                ))
            })?;
            let (_, iface) = capture_point(net, "--pcap", point)?;
            if net.iface(iface).tunnel.is_some() {
                return Err(Failure::Usage(format!(
                    "--pcap '{arg}': {point} is a tunnel device; capture on the interface that carries the tunnel"
                )));
            }
            Ok((iface, PathBuf::from(file)))
        })
        .collect()
}

/// Write each `--pcap` file with the frames `frames` gives for its interface.
fn write_pcaps(points: &[(IfId, PathBuf)], frames: impl Fn(IfId) -> Vec<Frame>) -> Result<(), Failure> {
    for (iface, file) in points {
        let frames = frames(*iface);
        crate::output::write_with(file, crate::output::FILE_MODE, |w| {
            wire::pcap::write(w, &frames).map_err(std::io::Error::other)
        })
        .map_err(|e| Failure::Usage(format!("--pcap {}: {e}", file.display())))?;
    }
    Ok(())
}

/// `fabsim run SCENARIO --seeds N`: the scenario under N seeds from `first`, and the steps
/// whose outcome differs between them.
fn run_seeds(
    path: &std::path::Path,
    until: Option<&str>,
    format: Format,
    first: u64,
    n: u64,
    out: &mut String,
) -> Result<i32, Failure> {
    let opened = scenario::open(path)?;
    if opened.scenario.is_none() {
        return Err(Failure::Usage(format!(
            "{} is a topology, not a scenario",
            path.display()
        )));
    }
    let seeds = scenario::seeds::seed_range(first, n);
    let started = std::time::Instant::now();
    let report = scenario::seeds::run_seeds(&opened, &path.display().to_string(), until, &seeds, SEEDS_THREADS)?;
    // Wall-clock time goes to stderr: the report itself stays byte-identical.
    eprintln!(
        "fabsim: {} seeds replayed in {:.1} s on {SEEDS_THREADS} threads",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
    match format {
        Format::Json => out.push_str(&report.json()),
        Format::Text => out.push_str(&report.text()),
    }
    Ok(report.exit_code)
}

/// Run `line` on `dev_name`, its output to `out`; returns what it put on the wire.
fn run_on(run: &Run, dev_name: &str, line: &str, out: &mut String) -> Result<Vec<Sent>, Failure> {
    let (net, st) = (run.engine.network(), run.engine.state());
    let dev = device(net, dev_name)?;
    let mut sent = Vec::new();
    match views::run_command_sent(net, st, dev, line, &mut sent) {
        Ok(text) => {
            out.push_str(&text);
            Ok(sent)
        }
        Err(e) => Err(Failure::Usage(format!("{dev_name}: {}", e.message))),
    }
}

fn execute(cmd: Command, out: &mut String) -> Result<i32, Failure> {
    match cmd {
        Command::Show {
            file,
            step,
            device,
            command,
        } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            run_on(&run, &device, &command, out)?;
            Ok(0)
        }
        Command::Ping {
            file,
            step,
            from,
            to,
            count,
            capture,
            pcap,
        } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            let net = run.engine.network();
            let to = target(&run, &to)?;
            let src = device(net, &from)?;
            let line = match net.device(src).kind {
                DeviceKind::Eos => format!("ping repeat {count} {to}"),
                _ => format!("ping -c {count} {to}"),
            };
            // The captures show the very requests the ping's text printed (a busybox ping's
            // icmp_seq from 0); they are written first, so a bad `--capture` or `--pcap`
            // fails before anything is printed.
            let mut text = String::new();
            let sent = run_on(&run, &from, &line, &mut text)?;
            let frames = |iface| views::tcpdump::sent_frames(net, &sent, iface);
            write_pcaps(&pcap_points(net, &pcap)?, frames)?;
            let mut captures = String::new();
            for arg in &capture {
                let (dev, iface) = capture_point(net, "--capture", arg)?;
                let text =
                    views::tcpdump::tcpdump(net, dev, iface, &frames(iface)).map_err(|e| Failure::Usage(e.message))?;
                captures.push_str(&format!(
                    "\n# {}: tcpdump -n -i {}\n{text}",
                    net.device(dev).name,
                    net.iface(iface).name
                ));
            }
            out.push_str(&text);
            out.push_str(&captures);
            Ok(0)
        }
        Command::Traceroute {
            file,
            step,
            from,
            to,
            pcap,
        } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            let to = target(&run, &to)?;
            let net = run.engine.network();
            let points = pcap_points(net, &pcap)?;
            // The capture holds the very probes the printed hops came from.
            let sent = run_on(&run, &from, &format!("traceroute -n {to}"), out)?;
            write_pcaps(&points, |iface| views::tcpdump::sent_frames(net, &sent, iface))?;
            Ok(0)
        }
        Command::Peer {
            file,
            step,
            device: dev_name,
            listen,
            as_peer,
            neighbor,
            duration,
        } => {
            let (_, mut run) = state_at(&file, step.as_deref())?;
            let net = run.engine.network();
            let dev = device(net, &dev_name)?;
            let addr = crate::peer::choose_neighbor(net, dev, as_peer, neighbor).map_err(Failure::Usage)?;
            let show = match net.device(dev).kind {
                DeviceKind::Linux => "birdc show route all",
                _ => "show ip bgp",
            };
            let last_view = |e: &crate::engine::Engine| {
                let text = views::run_command(e.network(), e.state(), dev, show).unwrap_or_else(|err| err.message);
                format!("{dev_name}# {show}\n{text}")
            };
            let duration = duration.map(std::time::Duration::from_secs);
            crate::peer::run(&mut run.engine, dev, addr, listen, duration, &last_view).map_err(Failure::Usage)?;
            Ok(0)
        }
        Command::Reach { file, step, format } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            reach(&run, format, out);
            Ok(0)
        }
        Command::Routes {
            file,
            step,
            device: only,
            format,
        } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            if let Some(d) = &only {
                device(run.engine.network(), d)?;
            }
            routes(&run, only.as_deref(), format, out);
            Ok(0)
        }
        Command::Lint { path, verbose, format } => {
            let items = scenario::lint::lint(&path)?;
            let ignored = if verbose {
                scenario::lint::ignored_by_design()
            } else {
                Vec::new()
            };
            match format {
                Format::Json => {
                    let doc = serde_json::json!({"warnings": items, "ignored_by_design": ignored});
                    out.push_str(&to_json(&doc));
                }
                Format::Text => out.push_str(&lint_text(&items, &ignored)),
            }
            Ok(0)
        }
        Command::Dump { file, step, format } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            match format {
                Format::Json => out.push_str(&to_json(&crate::model::normal::normalized(run.engine.network()))),
                Format::Text => return Err(Failure::Usage("dump supports --format json only".into())),
            }
            Ok(0)
        }
        Command::Run {
            scenario: path,
            until,
            format,
            junit,
            html,
            seed,
            seeds,
            color,
            verbose,
            pcap,
        } => {
            if let Some(n) = seeds {
                if junit.is_some() || html.is_some() || !pcap.is_empty() {
                    return Err(Failure::Usage(
                        "--junit, --html and --pcap apply to a single run, not to --seeds".into(),
                    ));
                }
                return run_seeds(&path, until.as_deref(), format, seed, n, out);
            }
            let opened = scenario::open(&path)?;
            let points = pcap_points(&opened.net, &pcap)?;
            let taps = points.iter().map(|(i, _)| *i).collect();
            let run = scenario::run_captured(&opened, until.as_deref(), seed, taps)?;
            print_warnings(&run);
            let net = run.engine.network();
            // One file per interface: BGP, OSPF and the run's own pings and traceroutes, merged
            // in time order by `pcap::write` (stable, so frames of one instant keep this order).
            write_pcaps(&points, |iface| {
                let mut frames = wire::tcp::bgp_frames(net, run.engine.bgp_wire(), iface);
                frames.extend(wire::ospf::ospf_frames(net, run.engine.ospf_wire(), iface));
                frames.extend_from_slice(run.tap.frames(iface));
                frames
            })?;
            let Some(scn) = &opened.scenario else {
                return Err(Failure::Usage(format!(
                    "{} is a topology, not a scenario",
                    path.display()
                )));
            };
            let report = RunReport::new(scn, &opened.topology_name, &run, seed, until.as_deref());
            if let Some(file) = &junit {
                crate::output::write(file, junit_xml(&report))
                    .map_err(|e| Failure::Usage(format!("--junit {}: {e}", file.display())))?;
            }
            if let Some(file) = &html {
                crate::output::write(file, scenario::html::page(&report))
                    .map_err(|e| Failure::Usage(format!("--html {}: {e}", file.display())))?;
            }
            match format {
                Format::Json => out.push_str(&report.json()),
                Format::Text => {
                    let color = match color {
                        ColorChoice::Always => true,
                        ColorChoice::Never => false,
                        ColorChoice::Auto => std::io::stdout().is_terminal(),
                    };
                    out.push_str(&report.text(color, verbose));
                }
            }
            Ok(report.summary.exit_code)
        }
        Command::Topo { file, step, format } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            let last = run.steps.last().unwrap_or(&run.start);
            let scene = scenario::html::drawing::Scene::of(&run.fabric, &last.fabric);
            let title = scenario::html::drawing::title(&last.id);
            match format {
                Drawing::Svg => {
                    out.push_str(&scene.svg(&title));
                    out.push('\n');
                }
                Drawing::Dot => out.push_str(&scene.dot(&title)),
            }
            Ok(0)
        }
        Command::Explain {
            file,
            step,
            tcp,
            udp,
            from,
            to,
        } => {
            let (_, run) = state_at(&file, step.as_deref())?;
            let kind = match (tcp, udp) {
                (Some(port), _) => ProbeKind::Tcp { dst_port: port },
                (None, Some(port)) => ProbeKind::Udp { dst_port: port },
                (None, None) => ProbeKind::Echo,
            };
            explain::explain(&run, &from, &to, kind, step.as_deref(), out)
        }
        Command::Ipam {
            command:
                IpamCommand::Blocks {
                    pool,
                    block_size,
                    nodes,
                },
        } => ipam_blocks(&pool, block_size, &nodes, out),
        Command::Export {
            file,
            step,
            to,
            out: dir,
            prefix,
            fast_timers,
            switches,
        } => {
            let switches = match switches {
                ExportSwitches::Frr => crate::export::Switches::Frr,
                ExportSwitches::Ceos => crate::export::Switches::Ceos,
            };
            let opts = crate::export::Options {
                prefix,
                fast_timers,
                switches,
            };
            export(&file, step.as_deref(), to, &dir, opts)
        }
        Command::Plan {
            command: PlanCommand::Pods(args),
        } => plan_pods(&args, out),
        Command::Plan {
            command:
                PlanCommand::NodeCidr {
                    cluster_cidr,
                    mask,
                    max_pods,
                    format,
                },
        } => {
            use crate::plan::{node_cidr, pools::cidr, render};
            let net = cidr(&cluster_cidr).map_err(|m| Failure::Usage(format!("--cluster-cidr {m}")))?;
            if mask < net.prefix_len() || mask > 32 {
                return Err(Failure::Usage(format!(
                    "--mask /{mask}: expected a node mask from /{} (the cluster prefix) to /32",
                    net.prefix_len()
                )));
            }
            if max_pods == Some(0) {
                return Err(Failure::Usage("--max-pods 0: expected a number greater than 0".into()));
            }
            let plan = node_cidr(net, mask, max_pods);
            out.push_str(&match format {
                Format::Text => render::node_cidr_text(&plan),
                Format::Json => render::json(&plan),
            });
            Ok(0)
        }
        Command::Gen {
            command: GenCommand::LeafSpine { plan, out: file },
        } => {
            plan.check().map_err(Failure::Usage)?;
            let text = plan.generate();
            match file {
                Some(path) => crate::output::write(&path, text)
                    .map_err(|e| Failure::Usage(format!("cannot write {}: {e}", path.display())))?,
                None => out.push_str(&text),
            }
            Ok(0)
        }
    }
}

/// `fabsim export`: the lab's files under `dir`; its limits on stderr.
fn export(
    file: &std::path::Path,
    step: Option<&str>,
    to: ExportTarget,
    dir: &std::path::Path,
    opts: crate::export::Options,
) -> Result<i32, Failure> {
    use crate::export::{self, Target};
    let prefix = &opts.prefix;
    let valid =
        !prefix.is_empty() && prefix.len() <= 16 && prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !valid {
        return Err(Failure::Usage(format!(
            "--prefix '{prefix}': expected 1-16 letters, digits or '-' (it names namespaces and /run/fabsim/PREFIX)"
        )));
    }
    let (_, run) = state_at(file, step)?;
    let target = match to {
        ExportTarget::Frr => Target::Frr,
        ExportTarget::Bird => Target::Bird,
        ExportTarget::Netns => Target::Netns,
        ExportTarget::Containerlab => Target::Containerlab,
        ExportTarget::Snapshot => Target::Snapshot,
    };
    let lab = export::export(run.engine.network(), run.engine.state(), target, &opts);
    lab.write(dir)
        .map_err(|e| Failure::Usage(format!("cannot write {}: {e}", dir.display())))?;
    for limit in &lab.limits {
        eprintln!("fabsim: export: {limit}");
    }
    Ok(0)
}

/// `fabsim plan pods`: one pool from the flags or several from a file; bad input exits 2.
fn plan_pods(a: &PodsArgs, out: &mut String) -> Result<i32, Failure> {
    use crate::plan::{plan_cluster, pools::cidr, read_pools, render, PoolInput, SubnetSpec};
    let supernet = match &a.supernet {
        Some(s) => Some(cidr(s).map_err(|m| Failure::Usage(format!("--supernet {m}")))?),
        None => None,
    };
    let plan = if let Some(path) = &a.pools {
        let text = crate::input::read_text(path).map_err(|e| {
            let at = crate::diag::Span::new(path.display().to_string(), e.line, e.col);
            Failure::Input(Diagnostic::error(at, format!("cannot read the pools file: {}", e.message)).into())
        })?;
        let file = read_pools(path, &text)?;
        let supernet = supernet.or(file.supernet);
        plan_cluster(&file.pools, supernet).map_err(|(i, key, msg)| {
            let at = file.spans.get(i).cloned().unwrap_or_default();
            Failure::Input(Diagnostic::error(at, format!("pool '{}': {key} {msg}", file.pools[i].name)).into())
        })?
    } else {
        let mut p = PoolInput::new(a.name.clone().unwrap_or_else(|| "default".into()));
        p.max_pods = a.max_pods;
        p.nodes = a.nodes;
        p.nic_ip_limit = a.nic_ip_limit;
        p.warm_per_node = a.warm_per_node;
        p.in_use = a.in_use;
        p.buffer_pct = a.buffer_pct.unwrap_or(p.buffer_pct);
        p.reserved = a.reserved.unwrap_or(p.reserved);
        p.nics = a.nics.unwrap_or(p.nics);
        p.dedicated_pct = a.dedicated_pct.unwrap_or(p.dedicated_pct);
        p.zones = a.zones.unwrap_or(p.zones);
        if let Some(s) = &a.subnet {
            p.subnet = Some(SubnetSpec::parse(s).map_err(|m| Failure::Usage(format!("--subnet {m}")))?);
        }
        if let (Some(c), Some(m)) = (&a.cluster_cidr, a.node_mask) {
            p.overlay = Some((cidr(c).map_err(|e| Failure::Usage(format!("--cluster-cidr {e}")))?, m));
        }
        if let (Some(SubnetSpec::Cidr(n)), Some(sup)) = (p.subnet, supernet) {
            if !sup.contains(&n) {
                return Err(Failure::Usage(format!("--subnet {n} is outside the --supernet {sup}")));
            }
        }
        plan_cluster(std::slice::from_ref(&p), supernet).map_err(|(_, key, msg)| match key {
            "pool" => Failure::Usage(
                "nothing to plan: give --max-pods and --nodes (a demand), --subnet, or --cluster-cidr with --node-mask"
                    .into(),
            ),
            _ => Failure::Usage(format!("--{} {msg}", key.replace('_', "-"))),
        })?
    };
    out.push_str(&match a.format {
        Format::Text => render::cluster_text(&plan),
        Format::Json => render::json(&plan),
    });
    Ok(0)
}

/// `fabsim ipam blocks`: claims in argument order. Bad input exits 2; a claim Calico would
/// refuse (pool exhausted, block limit) prints the claims so far, the reason on stderr, exit 1.
fn ipam_blocks(pool: &str, block_size: u8, nodes: &[String], out: &mut String) -> Result<i32, Failure> {
    use crate::calico::ipam::{BlockAllocator, IpamError, Pool};
    let cidr: ipnet::IpNet = pool.parse().map_err(|_| {
        Failure::Usage(format!(
            "--pool '{pool}' is not a CIDR (e.g. 10.66.0.0/16 or fd00:10:244::/48)"
        ))
    })?;
    let pool = Pool::new(cidr, block_size).map_err(|e| Failure::Usage(e.to_string()))?;
    let mut ipam = BlockAllocator::new(vec![pool]);
    for node in nodes {
        match ipam.claim(node) {
            Ok(block) => out.push_str(&format!("{node} {block}\n")),
            Err(e @ IpamError::NoFreeBlocks) => {
                eprintln!("fabsim: {node}: {e} (every /{block_size} block of {cidr} is claimed)");
                return Ok(1);
            }
            Err(e) => {
                eprintln!("fabsim: {node}: {e}");
                return Ok(1);
            }
        }
    }
    Ok(0)
}

fn target(run: &Run, to: &str) -> Result<std::net::Ipv4Addr, Failure> {
    resolve_target(run.engine.network(), run.engine.state(), to)
        .ok_or_else(|| Failure::Usage(format!("'{to}' is neither an IPv4 address nor an addressed device")))
}

#[derive(Serialize)]
struct ReachCell {
    from: String,
    to: String,
    address: String,
    reachable: bool,
    outcome: String,
}

/// Every Linux host pings every other host's first address.
fn reach(run: &Run, format: Format, out: &mut String) {
    let (net, st) = (run.engine.network(), run.engine.state());
    let hosts: Vec<_> = (0..net.devices.len())
        .map(|i| crate::model::DeviceId(i as u32))
        .filter(|d| net.device(*d).kind == DeviceKind::Linux)
        .collect();
    let mut cells = Vec::new();
    for &a in &hosts {
        for &b in &hosts {
            if a == b {
                continue;
            }
            let name_b = &net.device(b).name;
            let Some(addr) = resolve_target(net, st, name_b) else {
                continue;
            };
            let p = probe(net, st, a, addr, net.device(a).profile.ttl, ProbeKind::Echo, 1);
            cells.push(ReachCell {
                from: net.device(a).name.clone(),
                to: name_b.clone(),
                address: addr.to_string(),
                reachable: matches!(p.outcome, ProbeOutcome::Reply { .. }),
                outcome: describe_probe(net, &p),
            });
        }
    }
    match format {
        Format::Json => out.push_str(&to_json(&cells)),
        Format::Text => {
            let w = cells
                .iter()
                .map(|c| c.from.len() + c.to.len() + c.address.len() + 8)
                .max()
                .unwrap_or(0);
            for c in &cells {
                let pair = format!("{} -> {} ({})", c.from, c.to, c.address);
                let mark = if c.reachable { "ok  " } else { "FAIL" };
                out.push_str(&format!("{mark} {pair:<w$} {}\n", c.outcome));
            }
            let ok = cells.iter().filter(|c| c.reachable).count();
            out.push_str(&format!("{ok} of {} host pairs reachable\n", cells.len()));
        }
    }
}

#[derive(Serialize)]
struct JsonNextHop {
    address: Option<String>,
    interface: String,
}

#[derive(Serialize)]
struct JsonRoute {
    prefix: String,
    protocol: crate::engine::Proto,
    distance: u8,
    metric: u32,
    blackhole: bool,
    nexthops: Vec<JsonNextHop>,
}

#[derive(Serialize)]
struct JsonDeviceRoutes {
    device: String,
    routes: Vec<JsonRoute>,
}

fn routes(run: &Run, only: Option<&str>, format: Format, out: &mut String) {
    let (net, st) = (run.engine.network(), run.engine.state());
    let mut all = Vec::new();
    for (i, dev) in net.devices.iter().enumerate() {
        if only.is_some_and(|o| o != dev.name) {
            continue;
        }
        let routes = st.devices[i]
            .fib
            .iter()
            .map(|r| JsonRoute {
                prefix: r.prefix.to_string(),
                protocol: r.proto,
                distance: r.distance,
                metric: r.metric,
                blackhole: r.blackhole,
                nexthops: r
                    .nexthops
                    .iter()
                    .map(|h| JsonNextHop {
                        address: h.via.map(|a| a.to_string()),
                        interface: net.iface(h.iface).name.clone(),
                    })
                    .collect(),
            })
            .collect();
        all.push(JsonDeviceRoutes {
            device: dev.name.clone(),
            routes,
        });
    }
    match format {
        Format::Json => out.push_str(&to_json(&all)),
        Format::Text => {
            for d in &all {
                for r in &d.routes {
                    let hops: Vec<String> = r
                        .nexthops
                        .iter()
                        .map(|h| format!("{} {}", h.address.as_deref().unwrap_or("direct"), h.interface))
                        .collect();
                    out.push_str(&format!(
                        "{} {} {:?} [{}/{}] {}\n",
                        d.device,
                        r.prefix,
                        r.protocol,
                        r.distance,
                        r.metric,
                        hops.join(", ")
                    ));
                }
            }
        }
    }
}

fn to_json<T: Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
