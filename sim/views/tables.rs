//! The two table printers Kubernetes and Calico tools use: olekukonko/tablewriter (calicoctl
//! `node status`, `ipam show`) and Go's text/tabwriter (kubectl, calicoctl `get`).

/// An olekukonko/tablewriter v0.0.5 table as calicoctl prints it: `+---+` borders, one space
/// of padding, the header centred (an odd gap puts the extra space on the right), cells
/// left-aligned unless purely numeric (calico-reference.md §6.1, §6.3).
pub(crate) fn tablewriter<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
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
            let numeric = !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            if numeric {
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

/// Go's `text/tabwriter` as kubectl configures it (`printers.GetNewTabWriter`: minwidth 6,
/// padding 3, blanks): every column but the last is as wide as its widest cell plus 3, at
/// least 6; the last column is not padded.
pub(crate) fn tabwriter(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(String::len).max().unwrap_or(0))
        .map(|w| (w + 3).max(6))
        .collect();
    let mut out = String::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<w$}", w = widths[i]));
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
    }
}
