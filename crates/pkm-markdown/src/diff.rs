//! A unified diff of two versions of a note, line by line with three lines of context, to show
//! what an edit changes. The lines the two share at the start and the end are set aside first;
//! what is left between is compared by longest common subsequence when it is small enough
//! ([`MAX_CELLS`]), and shown as one replaced run otherwise.

/// The largest table (lines × lines) the comparison fills; past it the middle is one change.
const MAX_CELLS: usize = 4_000_000;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Del(usize),
    Ins(usize),
}

/// The unified diff from `old` to `new` of the note `name` (`--- a/name`, `+++ b/name`); empty
/// when the texts are equal. Lines are compared with their line breaks, shown without them.
pub fn unified(old: &str, new: &str, name: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = compare(&a, &b);
    let mut out = format!("--- a/{name}\n+++ b/{name}\n");
    for hunk in hunks(&ops) {
        write_hunk(&mut out, &ops[hunk], &a, &b);
    }
    out
}

fn compare(a: &[&str], b: &[&str]) -> Vec<Op> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let mut ops: Vec<Op> = (0..pre).map(|i| Op::Same(i, i)).collect();
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    if ma.len().saturating_mul(mb.len()) <= MAX_CELLS {
        ops.extend(lcs(ma, mb).into_iter().map(|op| shift(op, pre)));
    } else {
        ops.extend((pre..a.len() - suf).map(Op::Del));
        ops.extend((pre..b.len() - suf).map(Op::Ins));
    }
    ops.extend((0..suf).map(|k| Op::Same(a.len() - suf + k, b.len() - suf + k)));
    ops
}

fn shift(op: Op, by: usize) -> Op {
    match op {
        Op::Same(i, j) => Op::Same(i + by, j + by),
        Op::Del(i) => Op::Del(i + by),
        Op::Ins(j) => Op::Ins(j + by),
    }
}

/// An edit script from `a` to `b` that keeps a longest common subsequence.
fn lcs(a: &[&str], b: &[&str]) -> Vec<Op> {
    let w = b.len() + 1;
    // table[i * w + j]: the LCS length of a[i..] and b[j..].
    let mut table = vec![0u32; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            let v = if a[i] == b[j] {
                table[(i + 1) * w + j + 1] + 1
            } else {
                table[(i + 1) * w + j].max(table[i * w + j + 1])
            };
            table[i * w + j] = v;
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push(Op::Same(i, j));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || table[(i + 1) * w + j] >= table[i * w + j + 1]) {
            ops.push(Op::Del(i));
            i += 1;
        } else {
            ops.push(Op::Ins(j));
            j += 1;
        }
    }
    ops
}

/// The ranges of `ops` each hunk shows: changes with their context, joined when close.
fn hunks(ops: &[Op]) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        if matches!(op, Op::Same(..)) {
            continue;
        }
        let start = k.saturating_sub(CONTEXT);
        let end = (k + 1 + CONTEXT).min(ops.len());
        match out.last_mut() {
            Some(last) if start <= last.end => last.end = end,
            _ => out.push(start..end),
        }
    }
    out
}

fn write_hunk(out: &mut String, ops: &[Op], a: &[&str], b: &[&str]) {
    let first_a = ops.iter().find_map(|op| match op {
        Op::Same(i, _) | Op::Del(i) => Some(*i),
        Op::Ins(_) => None,
    });
    let first_b = ops.iter().find_map(|op| match op {
        Op::Same(_, j) | Op::Ins(j) => Some(*j),
        Op::Del(_) => None,
    });
    let count_a = ops.iter().filter(|op| !matches!(op, Op::Ins(_))).count();
    let count_b = ops.iter().filter(|op| !matches!(op, Op::Del(_))).count();
    // A side with no line in the hunk is numbered by the line before it (0 at the start).
    let at = |first: Option<usize>, count: usize, before: usize| match first {
        Some(i) if count > 0 => i + 1,
        _ => before,
    };
    let before_a = before_line(ops, true);
    let before_b = before_line(ops, false);
    out.push_str(&format!(
        "@@ -{},{} +{},{} @@\n",
        at(first_a, count_a, before_a),
        count_a,
        at(first_b, count_b, before_b),
        count_b
    ));
    for op in ops {
        let (mark, line) = match *op {
            Op::Same(i, _) => (' ', a[i]),
            Op::Del(i) => ('-', a[i]),
            Op::Ins(j) => ('+', b[j]),
        };
        out.push(mark);
        let shown = line.strip_suffix('\n').unwrap_or(line);
        out.push_str(shown.strip_suffix('\r').unwrap_or(shown));
        out.push('\n');
        if !line.ends_with('\n') {
            out.push_str("\\ No newline at end of file\n");
        }
    }
}

/// For a hunk with no line of one side: the number of that side's line before it.
fn before_line(ops: &[Op], old: bool) -> usize {
    // The hunk holds only insertions (old side) or only deletions (new side): the other side's
    // position is where they happen.
    ops.iter()
        .find_map(|op| match (op, old) {
            (Op::Ins(j), true) => Some(*j),
            (Op::Del(i), false) => Some(*i),
            _ => None,
        })
        .unwrap_or(0)
}
