//! Reading `perf script` output of data-address samples (`perf mem record`,
//! `perf c2c record`, or `perf record -d` on a precise memory event).
//!
//! Produce it with
//!
//! ```text
//! perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso,addr,data_src,weight,phys_addr --show-mmap-events
//! ```
//!
//! Required fields: `pid`, `cpu`, `addr`, `data_src`, `weight`. Optional: `comm`, `tid`
//! (then `pid/tid` is printed), `time`, `event`, `period`, `ip`, `sym`, `symoff`, `dso`,
//! `phys_addr` (only when recorded with `--phys-data`). `--show-mmap-events` adds the
//! PERF_RECORD_MMAP2 lines that attribute data addresses to mappings; without them
//! addresses stay unattributed. Other fields (`ins_lat`, `iregs`, `brstack`, `srcline`,
//! `data_page_size`, `cgroup`...) are not understood.
//!
//! What perf 6.1 prints (tools/perf/builtin-script.c, `process_event`), in this order
//! whatever the order of `-F`: `comm` as `%16s `, `pid/tid` as `%5d/%-5d ` (a lone pid
//! or tid as `%5d `), `cpu` as `[%03d] `, `time` as `%12s: ` (seconds.microseconds),
//! `period` as `%10u `, `event` as `%*s: `, `addr` as `%16x`, `data_src` as
//! `%16x |OP ...|LVL ...|SNP ...|TLB ...|LCK ...|BLK ...` (its decoding, padded to the
//! longest seen), `weight` as `%16u`, then ` ` + `ip` as `%16x` + ` sym` + ` (dso)`,
//! and `phys_addr` as `%16x`. `data_src` is decoded here from its number, not from
//! perf's text. A physical address is told from a symbol by the padding perf puts
//! before it (at least two spaces; a symbol follows one).
//!
//! With call chains (`perf record -g`), perf prints the frames on the following lines
//! instead of the ip; the first frame is taken as the ip.

use crate::datasrc::DataSrc;
use crate::sample::{Mapping, MemSample, Samples};
use std::collections::HashMap;

/// A line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> LineError {
    LineError {
        line,
        message: message.into(),
    }
}

/// Whether `text` is `perf script` output with data-source fields: some line among
/// the first 5000 holds perf's `data_src` decoding (`|OP ` then `|LVL `). perf stat
/// files (CSV, JSON) never do.
pub fn looks_like(text: &str) -> bool {
    text.lines()
        .take(5000)
        .any(|l| l.find("|OP ").is_some_and(|i| l[i..].contains("|LVL ")))
}

fn parse_hex(t: &str) -> Option<u64> {
    let t = t.strip_prefix("0x").unwrap_or(t);
    if t.is_empty() || t.len() > 16 {
        return None;
    }
    u64::from_str_radix(t, 16).ok()
}

fn is_digits(t: &str) -> bool {
    !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())
}

/// Parses `perf script` text.
pub fn parse(text: &str) -> Result<Samples, LineError> {
    let mut out = Samples::default();
    let mut code_cache: HashMap<String, u32> = HashMap::new();
    let mut seq = 0u64;
    // The sample whose ip is expected on the next (call-chain) line.
    let mut awaiting_frame: Option<usize> = None;
    let mut in_chain = false;
    let mut ip_seen = false;
    let mut time_seen = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            awaiting_frame = None;
            in_chain = false;
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(pos) = line.find("PERF_RECORD_") {
            awaiting_frame = None;
            in_chain = false;
            let rest = &line[pos + "PERF_RECORD_".len()..];
            if let Some(body) = rest.strip_prefix("MMAP2") {
                let mut m = parse_mmap(n, body, true)?;
                m.seq = seq;
                seq += 1;
                out.mappings.push(m);
            } else if let Some(body) = rest.strip_prefix("MMAP") {
                let mut m = parse_mmap(n, body, false)?;
                m.seq = seq;
                seq += 1;
                out.mappings.push(m);
            } else if let Some(body) = rest.strip_prefix("LOST") {
                // " lost N" style lines: count what we can.
                if let Some(v) = body
                    .split_whitespace()
                    .filter_map(|t| t.parse::<u64>().ok())
                    .next_back()
                {
                    out.lost = out.lost.saturating_add(v);
                }
            }
            continue;
        }
        // A call-chain frame: indented "ip sym (dso)".
        if line.starts_with(char::is_whitespace) && !line.contains("|OP ") {
            if let Some(k) = awaiting_frame.take() {
                let t = line.trim_start();
                let (ip, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
                let ip = parse_hex(ip).ok_or_else(|| {
                    err(n, format!("expected a call-chain frame (hex address, symbol, (object)) after a sample without ip, found {:?}", excerpt(t)))
                })?;
                out.samples[k].ip = Some(ip);
                ip_seen = true;
                let (sym, _) = split_sym_dso(rest);
                if let Some(s) = sym {
                    let c = out.code_index(&s, &mut code_cache);
                    out.samples[k].code = Some(c);
                }
                in_chain = true;
                continue;
            }
            if in_chain {
                continue;
            }
        }
        in_chain = false;
        let s = parse_sample(n, line, &mut out, &mut code_cache, seq)?;
        seq += 1;
        if s.ip.is_some() {
            ip_seen = true;
        }
        if s.time_ns.is_some() {
            time_seen = true;
        }
        let mut s = s;
        if s.phys_addr.is_some() {
            out.has_phys_addr = true;
        }
        // perf prints 0 when the physical address is not available.
        if s.phys_addr == Some(0) {
            s.phys_addr = None;
        }
        let awaiting = s.ip.is_none();
        out.samples.push(s);
        awaiting_frame = awaiting.then(|| out.samples.len() - 1);
    }
    out.has_ip = ip_seen;
    out.has_time = time_seen;
    out.drop_non_memory();
    Ok(out)
}

fn excerpt(s: &str) -> String {
    numalab_schema::text::excerpt(s, 80)
}

/// `(symbol, dso)` of "sym (dso)", "sym", "(dso)" or "".
fn split_sym_dso(rest: &str) -> (Option<String>, Option<String>) {
    let r = rest.trim();
    if r.is_empty() {
        return (None, None);
    }
    let (sym, dso) = if r.ends_with(')') {
        match r.rfind(" (").or_else(|| r.starts_with('(').then_some(0)) {
            Some(p) => {
                let open = if p == 0 && r.starts_with('(') {
                    0
                } else {
                    p + 1
                };
                (
                    r[..p.min(open)].trim(),
                    Some(r[open + 1..r.len() - 1].to_string()),
                )
            }
            None => (r, None),
        }
    } else {
        (r, None)
    };
    let sym = (!sym.is_empty() && sym != "[unknown]").then(|| {
        // "main+0x12" (symoff) -> "main".
        match sym.rfind("+0x") {
            Some(p) if p > 0 && sym[p + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => {
                sym[..p].to_string()
            }
            _ => sym.to_string(),
        }
    });
    (sym, dso)
}

/// The fields before perf's data_src decoding (`|OP ...`): where the decoding starts,
/// the tokens before the address, the address and the data_src value.
fn addr_and_data_src(n: usize, line: &str) -> Result<(usize, Vec<&str>, u64, u64), LineError> {
    let Some(op) = line.find("|OP ") else {
        return Err(err(
            n,
            format!(
                "no data_src field (perf prints its value then `|OP ...|LVL ...`): {:?}; run perf script with -F ...,addr,data_src,weight",
                excerpt(line)
            ),
        ));
    };
    let head: Vec<&str> = line[..op].split_whitespace().collect();
    if head.len() < 2 {
        return Err(err(
            n,
            "expected the addr and data_src values before `|OP` (fields addr,data_src)",
        ));
    }
    let data_src = parse_hex(head[head.len() - 1]).ok_or_else(|| {
        err(
            n,
            format!("data_src {:?} is not a hex number", head[head.len() - 1]),
        )
    })?;
    let addr = parse_hex(head[head.len() - 2]).ok_or_else(|| {
        err(
            n,
            format!(
                "the data address {:?} is not a hex number (field addr is required)",
                head[head.len() - 2]
            ),
        )
    })?;
    let len = head.len() - 2;
    let mut head = head;
    head.truncate(len);
    Ok((op, head, addr, data_src))
}

/// The CPU field (`[NNN]`) and the pid or pid/tid before it: (its index, cpu, pid,
/// tid).
fn cpu_and_ids(n: usize, head: &[&str]) -> Result<(usize, u32, i64, i64), LineError> {
    let Some(ci) = head.iter().position(|t| {
        t.len() > 2 && t.starts_with('[') && t.ends_with(']') && is_digits(&t[1..t.len() - 1])
    }) else {
        return Err(err(
            n,
            "no CPU field ([NNN]); run perf script with -F ...,cpu,...",
        ));
    };
    let cpu: u32 = head[ci][1..head[ci].len() - 1]
        .parse()
        .map_err(|_| err(n, "CPU number out of range"))?;
    if ci == 0 {
        return Err(err(n, "no pid before the CPU field; add pid to -F"));
    }
    let ids = head[ci - 1];
    let (pid, tid) = match ids.split_once('/') {
        Some((p, t)) => (p.parse::<i64>(), t.parse::<i64>()),
        None => (ids.parse::<i64>(), ids.parse::<i64>()),
    };
    let (Ok(pid), Ok(tid)) = (pid, tid) else {
        return Err(err(
            n,
            format!("{ids:?} is not a pid or pid/tid (add pid to -F)"),
        ));
    };
    Ok((ci, cpu, pid, tid))
}

/// The fields after the CPU: an optional time (`SECS.FRAC:`), an optional period (a
/// bare number), then the event name ending with ':' (registered in `out`).
fn time_and_event(
    n: usize,
    mut rest: &[&str],
    out: &mut Samples,
) -> Result<(Option<u64>, u16), LineError> {
    let mut time_ns = None;
    if let Some(t) = rest.first().and_then(|t| t.strip_suffix(':')) {
        if let Some((s, frac)) = t.split_once('.') {
            if is_digits(s) && is_digits(frac) {
                let secs: u64 = s.parse().map_err(|_| err(n, "time out of range"))?;
                let mut f = frac.to_string();
                f.truncate(9);
                while f.len() < 9 {
                    f.push('0');
                }
                let nanos: u64 = f.parse().unwrap_or(0);
                time_ns = Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos));
                rest = &rest[1..];
            }
        }
    }
    if rest.first().is_some_and(|t| is_digits(t)) {
        rest = &rest[1..];
    }
    let event = rest.join(" ");
    let event = event.strip_suffix(':').unwrap_or(&event).trim().to_string();
    let event = out.event_index(if event.is_empty() {
        "(event not printed)"
    } else {
        &event
    });
    Ok((time_ns, event))
}

/// The weight after the data_src decoding (`tail` starts at `|OP`), and what follows
/// it.
fn weight_after_decoding(n: usize, tail: &str) -> Result<(u64, &str), LineError> {
    // The decoding is at most 82 characters (perf formats value and decoding into 100
    // bytes); it ends with the BLK segment (perf >= 5.12) or the LCK one.
    let mut window = tail.len().min(100);
    while !tail.is_char_boundary(window) {
        window -= 1;
    }
    let w = &tail[..window];
    let last_bar = w
        .find("|BLK")
        .or_else(|| w.find("|LCK"))
        .or_else(|| w.rfind('|'))
        .unwrap_or(0);
    let after = &tail[last_bar + 1..];
    // Skip the last segment's name and words up to the first number.
    let mut pos = 0;
    let mut weight = None;
    let mut first = true;
    for (start, tok) in tokens(after) {
        if first {
            first = false;
            pos = start + tok.len();
            continue;
        }
        pos = start + tok.len();
        if is_digits(tok) {
            weight = Some(
                tok.parse::<u64>()
                    .map_err(|_| err(n, "weight out of range"))?,
            );
            break;
        }
    }
    let Some(weight) = weight else {
        return Err(err(
            n,
            "no weight after the data_src decoding (field weight is required); the line may be cut short",
        ));
    };
    Ok((weight, &after[pos..]))
}

/// What follows the weight, each when printed.
#[derive(Default)]
struct AfterWeight {
    /// The instruction pointer.
    ip: Option<u64>,
    /// The code symbol (index into [`Samples::code_names`]).
    code: Option<u32>,
    /// The physical address.
    phys: Option<u64>,
}

/// What follows the weight: " ip sym (dso)", then a physical address.
fn ip_code_phys(
    n: usize,
    rest: &str,
    out: &mut Samples,
    code_cache: &mut HashMap<String, u32>,
) -> Result<AfterWeight, LineError> {
    if rest.trim().is_empty() {
        return Ok(AfterWeight::default());
    }
    let mut phys = None;
    let mut body = rest.trim_start();
    let (ip_tok, more) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let ip = parse_hex(ip_tok).ok_or_else(|| {
        err(
            n,
            format!(
                "expected the instruction pointer (hex) after the weight, found {:?}",
                excerpt(ip_tok)
            ),
        )
    })?;
    body = more;
    // A physical address: the last token, hex, after at least two spaces.
    let t = body.trim_end();
    if let Some(sp) = t.rfind(char::is_whitespace) {
        let last = &t[sp + 1..];
        let before = &t[..=sp];
        let pad = before.len() - before.trim_end().len();
        if pad >= 2 && last.len() <= 16 {
            if let Some(p) = parse_hex(last) {
                phys = Some(p);
                body = before;
            }
        }
    } else if !t.is_empty() && t.len() <= 16 && body.len() - body.trim_start().len() >= 2 {
        if let Some(p) = parse_hex(t) {
            phys = Some(p);
            body = "";
        }
    }
    let (sym, _dso) = split_sym_dso(body);
    let code = sym.map(|s| out.code_index(&s, code_cache));
    Ok(AfterWeight {
        ip: Some(ip),
        code,
        phys,
    })
}

/// One sample line of `perf script` output.
fn parse_sample(
    n: usize,
    line: &str,
    out: &mut Samples,
    code_cache: &mut HashMap<String, u32>,
    seq: u64,
) -> Result<MemSample, LineError> {
    let (op, head, addr, data_src) = addr_and_data_src(n, line)?;
    let (ci, cpu, pid, tid) = cpu_and_ids(n, &head)?;
    let (time_ns, event) = time_and_event(n, &head[ci + 1..], out)?;
    // After the decoding: weight, then " ip sym (dso)", then phys_addr.
    let (weight, rest) = weight_after_decoding(n, &line[op..])?;
    let AfterWeight { ip, code, phys } = ip_code_phys(n, rest, out, code_cache)?;
    Ok(MemSample {
        seq,
        pid: pid as u32,
        tid: tid as u32,
        cpu,
        time_ns,
        ip,
        code,
        addr,
        data_src: DataSrc(data_src),
        weight,
        phys_addr: phys,
        event,
    })
}

/// Whitespace-separated tokens with their byte offsets.
fn tokens(s: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if let Some(b) = start.take() {
                out.push((b, &s[b..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(b) = start {
        out.push((b, &s[b..]));
    }
    out.into_iter()
}

/// ` pid/tid: [0xSTART(0xLEN) @ PGOFF MAJ:MIN INO GEN]: rwxp PATH` (MMAP2, or with
/// `<BUILDID>` instead of the device and inode) or ` pid/tid: [0xSTART(0xLEN) @ PGOFF]:
/// x PATH` (MMAP).
fn parse_mmap(n: usize, body: &str, v2: bool) -> Result<Mapping, LineError> {
    let what = if v2 {
        "PERF_RECORD_MMAP2"
    } else {
        "PERF_RECORD_MMAP"
    };
    let bad = |m: &str| err(n, format!("{what}: {m}"));
    let b = body.trim_start();
    let (ids, b) = b
        .split_once(": [")
        .ok_or_else(|| bad("expected `pid/tid: [`; the line may be cut short"))?;
    let pid: u32 = ids
        .split('/')
        .next()
        .and_then(|p| p.trim().parse::<i64>().ok())
        .map(|p| p as u32)
        .ok_or_else(|| bad("no pid"))?;
    let (inner, tail) = b
        .split_once("]: ")
        .ok_or_else(|| bad("expected `]: ` after the range; the line may be cut short"))?;
    let (start, inner) = inner
        .split_once('(')
        .ok_or_else(|| bad("expected START(LEN)"))?;
    let (len, inner) = inner
        .split_once(')')
        .ok_or_else(|| bad("expected START(LEN)"))?;
    let start = parse_hex(start.trim()).ok_or_else(|| bad("start is not hex"))?;
    let len = parse_hex(len.trim()).ok_or_else(|| bad("length is not hex"))?;
    let inner = inner.trim_start();
    let inner = inner
        .strip_prefix('@')
        .ok_or_else(|| bad("expected `@ PGOFF`"))?;
    let mut it = inner.split_whitespace();
    let pgoff = it
        .next()
        .and_then(parse_hex)
        .ok_or_else(|| bad("pgoff is not hex"))?;
    let mut dev_ino = None;
    let mut build_id = None;
    if v2 {
        match it.next() {
            Some(t) if t.starts_with('<') => {
                build_id = Some(t.trim_matches(|c| c == '<' || c == '>').to_string());
            }
            Some(t) => {
                let (maj, min) = t.split_once(':').ok_or_else(|| bad("expected MAJ:MIN"))?;
                let maj = u32::from_str_radix(maj, 16).map_err(|_| bad("bad major"))?;
                let min = u32::from_str_radix(min, 16).map_err(|_| bad("bad minor"))?;
                let ino = it
                    .next()
                    .and_then(|t| t.parse::<u64>().ok())
                    .ok_or_else(|| bad("bad inode"))?;
                dev_ino = Some((maj, min, ino));
            }
            None => return Err(bad("expected device and inode or a build id")),
        }
    }
    let (prot, path) = match tail.split_once(' ') {
        Some((p, rest)) => (p.to_string(), rest.to_string()),
        None => (tail.to_string(), String::new()),
    };
    Ok(Mapping {
        seq: 0,
        pid,
        start,
        len,
        pgoff,
        prot: Some(prot),
        path,
        dev_ino,
        build_id,
    })
}
