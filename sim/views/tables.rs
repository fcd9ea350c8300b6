//! The two table printers Kubernetes and Calico tools use: olekukonko/tablewriter (calicoctl
//! `node status`, `ipam show`) and Go's text/tabwriter (kubectl, calicoctl `get`).

/// An olekukonko/tablewriter v0.0.5 table as calicoctl prints it: `+---+` borders, one space
/// of padding, the header centred (an odd gap puts the extra space on the right), cells
/// left-aligned unless purely numeric (calico-reference.md §6.1, §6.3).
pub(crate) fn tablewriter<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    render(header, rows, false)
}

/// The same table after `SetAlignment(tablewriter.ALIGN_RIGHT)`, as etcdctl's table printer
/// (`printer_table.go`) sets it: every cell right-aligned.
pub(crate) fn tablewriter_right<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    render(header, rows, true)
}

fn render<const N: usize>(header: &[&str; N], rows: &[[String; N]], right: bool) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let rule: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+\n";
    let mut out = rule.clone();
    for (h, w) in header.iter().zip(&widths) {
        let gap = w - h.len();
        out.push_str(&format!("| {}{}{} ", " ".repeat(gap / 2), h, " ".repeat(gap - gap / 2)));
    }
    out.push_str("|\n");
    out.push_str(&rule);
    for r in rows {
        for (c, w) in r.iter().zip(&widths) {
            if right || is_decimal(c) {
                out.push_str(&format!("| {c:>w$} "));
            } else {
                out.push_str(&format!("| {c:<w$} "));
            }
        }
        out.push_str("|\n");
    }
    out.push_str(&rule);
    out
}

/// tablewriter's `decimal` pattern, `^-?(?:\d{1,3}(?:,\d{3})*|\d+)(?:\.\d+)?$`: a number,
/// optionally with thousands separators and one fraction (an IPv4 address is not one).
fn is_decimal(cell: &str) -> bool {
    let body = cell.strip_prefix('-').unwrap_or(cell);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let grouped = {
        let mut groups = int.split(',');
        let first = groups.next().unwrap_or("");
        (1..=3).contains(&first.len()) && digits(first) && groups.all(|g| g.len() == 3 && digits(g))
    };
    (digits(int) || grouped) && frac.is_none_or(digits)
}

/// Go's `text/tabwriter` as kubectl configures it (`printers.GetNewTabWriter`: minwidth 6,
/// padding 3, blanks): every column but the last is as wide as its widest cell plus 3, at
/// least 6; the last column is not padded.
pub(crate) fn tabwriter(rows: &[Vec<String>]) -> String {
    tabwriter_with(rows, 6, 3)
}

/// Go's `text/tabwriter` with blanks, `minwidth` and `padding` (`kubectl describe` uses 0 and
/// 2). A cell belongs to a column only when a tab ends it (the text after a line's last tab
/// is not padded), and a column's width is set per block of adjacent lines that have it (so a
/// lone `Port:\thttps\t443/TCP` line pads `https` by itself). A last cell spanning lines (an
/// event message with a newline) goes on below its row from the line's start, as Go's
/// tabwriter writes it; column widths come from first lines.
pub(crate) fn tabwriter_with(rows: &[Vec<String>], minwidth: usize, padding: usize) -> String {
    let first_line = |c: &String| c.lines().next().map_or(0, str::len);
    let has = |r: &Vec<String>, col: usize| col + 1 < r.len();
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    // widths[row][col]: the width of the block the row's cell is in.
    let mut widths = vec![vec![0; cols]; rows.len()];
    for col in 0..cols {
        let mut start = 0;
        while start < rows.len() {
            let end = start + rows[start..].iter().take_while(|r| has(r, col)).count();
            let w = rows[start..end].iter().map(|r| first_line(&r[col])).max().unwrap_or(0);
            for row in &mut widths[start..end] {
                row[col] = (w + padding).max(minwidth);
            }
            start = end.max(start + 1);
        }
    }
    let mut out = String::new();
    for (r, w) in rows.iter().zip(&widths) {
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$}", w = w[i]));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn tabwriter_pads_every_column_but_the_last() {
        let rows = vec![
            vec!["NAME".to_string(), "STATUS".into(), "AGE".into()],
            vec!["k-master".to_string(), "Ready".into(), "2d7h".into()],
        ];
        assert_eq!(
            super::tabwriter(&rows),
            "NAME       STATUS   AGE\nk-master   Ready    2d7h\n"
        );
    }

    #[test]
    fn tablewriter_right_aligns_numbers() {
        let t = super::tablewriter(&["A", "TOTAL"], &[["x".into(), "64".into()]]);
        assert!(t.contains("| x |    64 |"), "{t}");
        assert!(super::is_decimal("1,024.5") && !super::is_decimal("10.0.137.12") && !super::is_decimal("1,02"));
    }
}
