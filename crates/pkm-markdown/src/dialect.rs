//! The app a vault is kept with, and the rules where apps disagree (ADR-0008): how a file's name
//! becomes a page name, which heading-less note gets which title, and which syntax is a comment.
//!
//! The dialect is detected from the vault's own configuration by the caller (this crate does no
//! IO): `logseq/config.edn` makes a Logseq graph (read with [`Dialect::logseq`]), a `.obsidian/`
//! folder an Obsidian vault, anything else plain markdown (Foam and most editors).

/// Which app's rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// CommonMark with wiki links (Foam, Zettlr, plain editors).
    #[default]
    Markdown,
    Obsidian,
    Logseq,
}

impl Flavor {
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Markdown => "markdown",
            Flavor::Obsidian => "obsidian",
            Flavor::Logseq => "logseq",
        }
    }
}

/// A vault's dialect: its flavor and, for Logseq, the graph's file-name and journal settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialect {
    pub flavor: Flavor,
    /// Logseq `:file/name-format :triple-lowbar`: a namespace `a/b` is saved as `a___b.md`.
    /// Otherwise (the legacy format) it is saved as `a%2Fb.md`. Both are read either way.
    pub triple_lowbar: bool,
    /// Logseq `:journal/page-title-format` (default `MMM do, yyyy`).
    pub journal_title_format: String,
    /// Logseq `:journal/file-name-format` (default `yyyy_MM_dd`).
    pub journal_file_format: String,
    /// Logseq `:journals-directory` (default `journals`).
    pub journals_dir: String,
    /// Logseq `:hidden`: folders and files (vault paths) the graph leaves out.
    pub hidden: Vec<String>,
}

impl Default for Dialect {
    fn default() -> Dialect {
        Dialect::of(Flavor::Markdown)
    }
}

impl Dialect {
    /// A dialect with the app's defaults.
    pub fn of(flavor: Flavor) -> Dialect {
        Dialect {
            flavor,
            triple_lowbar: false,
            journal_title_format: "MMM do, yyyy".into(),
            journal_file_format: "yyyy_MM_dd".into(),
            journals_dir: "journals".into(),
            hidden: Vec::new(),
        }
    }

    /// A Logseq graph configured by `config_edn` (the text of `logseq/config.edn`); keys it does
    /// not set keep Logseq's defaults.
    pub fn logseq(config_edn: &str) -> Dialect {
        let mut d = Dialect::of(Flavor::Logseq);
        d.triple_lowbar = edn_value(config_edn, ":file/name-format")
            .is_some_and(|v| v.trim_start_matches(':') == "triple-lowbar");
        if let Some(v) = edn_value(config_edn, ":journal/page-title-format").and_then(edn_string) {
            d.journal_title_format = v;
        }
        if let Some(v) = edn_value(config_edn, ":journal/file-name-format").and_then(edn_string) {
            d.journal_file_format = v;
        }
        if let Some(v) = edn_value(config_edn, ":journals-directory").and_then(edn_string) {
            d.journals_dir = v.trim_matches('/').to_owned();
        }
        d.hidden = edn_strings(config_edn, ":hidden")
            .into_iter()
            .map(|h| h.trim_matches('/').to_owned())
            .filter(|h| !h.is_empty())
            .collect();
        d
    }

    /// The name under which the app shows the note at vault path `path` (`a/b/Name.md`) when the
    /// note itself names no title: Logseq decodes namespaces (`a___b`, `a%2Fb` → `a/b`) and names
    /// journals by their date; other apps show the file name without `.md`.
    pub fn page_name(&self, path: &str) -> String {
        let slug = path.strip_suffix(".md").unwrap_or(path);
        let (folder, stem) = slug.rsplit_once('/').unwrap_or(("", slug));
        if self.flavor != Flavor::Logseq {
            return stem.to_owned();
        }
        if folder == self.journals_dir
            && let Some(name) = self.journal_name(stem)
        {
            return name;
        }
        let name = if stem.contains("___") {
            stem.replace("___", "/")
        } else {
            stem.to_owned()
        };
        percent_decode(&name)
    }

    /// Whether vault path `path` (a folder or a file) is left out of the graph: Logseq's own
    /// folder `logseq/` (its config, backups `bak/` and `version-files/`) and what its `:hidden`
    /// names.
    pub fn in_app_folder(&self, path: &str) -> bool {
        let under = |dir: &str| {
            path.strip_prefix(dir)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        self.flavor == Flavor::Logseq && (under("logseq") || self.hidden.iter().any(|h| under(h)))
    }

    /// Whether a note may name its own title (frontmatter `title`, `title::`); Obsidian always
    /// shows the file's name.
    pub fn title_from_note(&self) -> bool {
        self.flavor != Flavor::Obsidian
    }

    /// Whether a link resolves by alias only after every file-name rule: Obsidian itself never
    /// resolves a link by alias (it writes `[[File|alias]]`), so an alias must not take a link
    /// away from the file of that name.
    pub fn aliases_last(&self) -> bool {
        self.flavor == Flavor::Obsidian
    }

    /// Whether the app uses a note's first `# heading` as its title when nothing else names it
    /// (Logseq and Obsidian show the file's name instead).
    pub fn title_from_heading(&self) -> bool {
        self.flavor == Flavor::Markdown
    }

    /// Whether `%%text%%` is a comment (Obsidian): nothing in it is a link or a tag.
    pub fn percent_comments(&self) -> bool {
        self.flavor == Flavor::Obsidian
    }

    /// Whether `#+BEGIN_…`/`#+END_…` blocks are literal text (Logseq reads them as org-mode
    /// source and example blocks).
    pub fn org_blocks(&self) -> bool {
        self.flavor == Flavor::Logseq
    }

    /// Whether a note that keeps no properties yet gets them as YAML frontmatter (every app but
    /// Logseq) rather than as `key:: value` lines opening the page (Logseq).
    pub fn properties_in_frontmatter(&self) -> bool {
        self.flavor != Flavor::Logseq
    }

    /// Whether a `#tag` is a reference to the page of that name (Logseq), shown in its backlinks.
    pub fn tags_are_links(&self) -> bool {
        self.flavor == Flavor::Logseq
    }

    /// The pages a page names by its own tags (`tags::`, frontmatter `tags`): in Logseq a page
    /// tagged `x` is among the references of page `x`, shown in its backlinks; other apps keep a
    /// page's tags apart from its links, so none.
    pub fn tag_pages<'a>(&self, page_tags: &'a [String]) -> &'a [String] {
        if self.tags_are_links() {
            page_tags
        } else {
            &[]
        }
    }

    /// A journal file's page name: `2026_12_03` read with the file format, written with the
    /// title format (`Dec 3rd, 2026`). `None` when the stem is not a date in that format.
    fn journal_name(&self, stem: &str) -> Option<String> {
        let date = Date::parse(stem, &self.journal_file_format)?;
        Some(date.format(&self.journal_title_format))
    }
}

/// The raw value after `key` in an EDN map, up to the end of its token or string. Comments
/// (`;` to the end of a line) are skipped; the first occurrence outside a comment wins.
fn edn_value<'a>(edn: &'a str, key: &str) -> Option<&'a str> {
    for line in edn.lines() {
        let code = line.split(';').next().unwrap_or_default();
        let Some(at) = code.find(key) else {
            continue;
        };
        let after = code.get(at + key.len()..)?;
        // The key must end there (`:journal/page-title-format-x` is another key).
        if after
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && c != '"' && c != ':')
        {
            continue;
        }
        let v = after.trim_start();
        if let Some(rest) = v.strip_prefix('"') {
            let end = rest.find('"')?;
            return v.get(..end + 2);
        }
        let end = v
            .find(|c: char| c.is_whitespace() || matches!(c, '}' | ',' | ']' | ')'))
            .unwrap_or(v.len());
        return v.get(..end).filter(|s| !s.is_empty());
    }
    None
}

/// The strings of the EDN vector after `key` (`:hidden ["/archive" "draft.md"]`), which may span
/// lines; empty when the key is missing or not a vector of strings.
fn edn_strings(edn: &str, key: &str) -> Vec<String> {
    let code: String = edn
        .lines()
        .map(|l| l.split(';').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let Some(at) = code.find(key) else {
        return Vec::new();
    };
    let rest = code.get(at + key.len()..).unwrap_or_default().trim_start();
    let Some(body) = rest.strip_prefix('[').and_then(|r| r.split(']').next()) else {
        return Vec::new();
    };
    body.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn edn_string(v: &str) -> Option<String> {
    v.strip_prefix('"')?
        .strip_suffix('"')
        .map(str::to_owned)
        .filter(|s| !s.is_empty())
}

/// Decodes `%XX` escapes; text that would not be UTF-8 afterwards is returned unchanged.
pub fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = |j: usize| b.get(j).and_then(|h| (*h as char).to_digit(16));
        match (c, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                i += 3;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// A calendar date, for journal page names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Date {
    year: u32,
    month: u32,
    day: u32,
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The date-format tokens Logseq's formats use (cljs-time / date-fns letters), longest first.
const TOKENS: [&str; 13] = [
    "yyyy", "EEEE", "MMMM", "EEE", "MMM", "yy", "MM", "do", "dd", "EE", "M", "d", "E",
];

impl Date {
    /// Reads `s` written in `format`; only numeric tokens (`yyyy`, `yy`, `MM`, `M`, `dd`, `d`)
    /// and literal text are accepted, as in journal file names.
    fn parse(s: &str, format: &str) -> Option<Date> {
        let (mut year, mut month, mut day) = (None, None, None);
        let mut rest = s;
        let mut fmt = format;
        while !fmt.is_empty() {
            let token = TOKENS.iter().find(|t| fmt.starts_with(**t));
            match token {
                Some(&t @ ("yyyy" | "yy" | "MM" | "M" | "dd" | "d")) => {
                    let fixed = matches!(t, "yyyy" | "yy" | "MM" | "dd");
                    let width = if fixed { t.len() } else { 2 };
                    let digits = rest
                        .char_indices()
                        .take(width)
                        .take_while(|(_, c)| c.is_ascii_digit())
                        .count();
                    if digits == 0 || (fixed && digits != t.len()) {
                        return None;
                    }
                    let n: u32 = rest.get(..digits)?.parse().ok()?;
                    rest = rest.get(digits..)?;
                    match t {
                        "yyyy" => year = Some(n),
                        "yy" => year = Some(2000 + n),
                        "MM" | "M" => month = Some(n),
                        _ => day = Some(n),
                    }
                    fmt = fmt.get(t.len()..)?;
                }
                Some(_) => return None,
                None => {
                    let c = fmt.chars().next()?;
                    rest = rest.strip_prefix(c)?;
                    fmt = fmt.get(c.len_utf8()..)?;
                }
            }
        }
        let date = Date {
            year: year?,
            month: month?,
            day: day?,
        };
        (rest.is_empty() && (1..=12).contains(&date.month) && (1..=31).contains(&date.day))
            .then_some(date)
    }

    fn format(self, format: &str) -> String {
        let mut out = String::new();
        let mut fmt = format;
        let month = MONTHS
            .get(self.month.saturating_sub(1) as usize)
            .copied()
            .unwrap_or_default();
        let weekday = WEEKDAYS.get(self.weekday()).copied().unwrap_or_default();
        while !fmt.is_empty() {
            let Some(&t) = TOKENS.iter().find(|t| fmt.starts_with(**t)) else {
                let c = fmt.chars().next().unwrap_or_default();
                out.push(c);
                fmt = fmt.get(c.len_utf8()..).unwrap_or_default();
                continue;
            };
            match t {
                "yyyy" => out.push_str(&format!("{:04}", self.year)),
                "yy" => out.push_str(&format!("{:02}", self.year % 100)),
                "MMMM" => out.push_str(month),
                "MMM" => out.push_str(month.get(..3).unwrap_or(month)),
                "MM" => out.push_str(&format!("{:02}", self.month)),
                "M" => out.push_str(&self.month.to_string()),
                "dd" => out.push_str(&format!("{:02}", self.day)),
                "d" => out.push_str(&self.day.to_string()),
                "do" => out.push_str(&ordinal(self.day)),
                "EEEE" => out.push_str(weekday),
                _ => out.push_str(weekday.get(..3).unwrap_or(weekday)),
            }
            fmt = fmt.get(t.len()..).unwrap_or_default();
        }
        out
    }

    /// 0 = Monday (Sakamoto's method).
    fn weekday(self) -> usize {
        const T: [u32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
        let y = if self.month < 3 {
            self.year.saturating_sub(1)
        } else {
            self.year
        };
        let t = T
            .get(self.month.saturating_sub(1) as usize)
            .copied()
            .unwrap_or(0);
        let sunday_based = (y + y / 4 - y / 100 + y / 400 + t + self.day) % 7;
        ((sunday_based + 6) % 7) as usize
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th`, `22nd`.
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logseq_page_names_from_file_names() {
        let d = Dialect::logseq("{:file/name-format :triple-lowbar}");
        assert!(d.triple_lowbar);
        assert_eq!(
            d.page_name("pages/Whiteboard___Object.md"),
            "Whiteboard/Object"
        );
        assert_eq!(
            d.page_name("pages/Whiteboard%2FObject.md"),
            "Whiteboard/Object"
        );
        assert_eq!(d.page_name("pages/a___b___c.md"), "a/b/c");
        assert_eq!(d.page_name("pages/What%3F.md"), "What?");
        assert_eq!(d.page_name("pages/plain.md"), "plain");
        assert_eq!(d.page_name("journals/2026_12_03.md"), "Dec 3rd, 2026");
        assert_eq!(d.page_name("journals/not-a-date.md"), "not-a-date");
        // Only the journals folder holds journals.
        assert_eq!(d.page_name("pages/2026_12_03.md"), "2026_12_03");
        // Other apps show the file name as it is.
        let o = Dialect::of(Flavor::Obsidian);
        assert_eq!(
            o.page_name("a/Whiteboard___Object.md"),
            "Whiteboard___Object"
        );
    }

    #[test]
    fn journal_formats_from_config() {
        let d = Dialect::logseq(
            r#"{:meta/version 1
 ;; :journal/page-title-format "yyyy"
 :journal/page-title-format "EEEE, dd.MM.yyyy"
 :journal/file-name-format "yyyy-MM-dd"
 :journals-directory "daily"}"#,
        );
        assert!(!d.triple_lowbar);
        assert!(d.hidden.is_empty());
        assert_eq!(d.page_name("daily/2026-12-03.md"), "Thursday, 03.12.2026");
        assert_eq!(d.page_name("journals/2026-12-03.md"), "2026-12-03");
        let d = Dialect::logseq(r#"{:journal/page-title-format "E, MM/dd/yyyy"}"#);
        assert_eq!(d.page_name("journals/2024_02_29.md"), "Thu, 02/29/2024");
        let d = Dialect::logseq(r#"{:journal/page-title-format "do MMMM yy"}"#);
        assert_eq!(d.page_name("journals/2021_01_11.md"), "11th January 21");
        assert_eq!(d.page_name("journals/2021_01_22.md"), "22nd January 21");
    }

    #[test]
    fn logseq_leaves_out_its_folder_and_hidden_paths() {
        let d =
            Dialect::logseq("{:hidden [\"/archive\"\n  \"drafts/old.md\"] ; \"not-this\"\n :x 1}");
        assert_eq!(d.hidden, vec!["archive", "drafts/old.md"]);
        for path in [
            "logseq",
            "logseq/bak/pages/a.md",
            "archive/x.md",
            "drafts/old.md",
        ] {
            assert!(d.in_app_folder(path), "{path}");
        }
        for path in [
            "logseqs/a.md",
            "pages/archive.md",
            "drafts/new.md",
            "archived/x.md",
        ] {
            assert!(!d.in_app_folder(path), "{path}");
        }
        assert!(!Dialect::of(Flavor::Obsidian).in_app_folder("logseq/a.md"));
    }

    #[test]
    fn a_pages_tags_follow_the_dialect() {
        let text = "- a %% #hidden %% #shown\n";
        let obsidian = Dialect::of(Flavor::Obsidian);
        let page = crate::block_parser::parse_page_as(text, "n", &obsidian);
        assert_eq!(page.tags, vec!["shown"]);
        let page = crate::block_parser::parse_page_as(text, "n", &Dialect::default());
        assert_eq!(page.tags, vec!["hidden", "shown"]);
    }

    #[test]
    fn only_logseq_pages_tags_name_pages() {
        let tags = vec!["project".to_owned(), "area/home".to_owned()];
        assert_eq!(Dialect::logseq("{}").tag_pages(&tags), tags.as_slice());
        for flavor in [Flavor::Markdown, Flavor::Obsidian] {
            assert!(
                Dialect::of(flavor).tag_pages(&tags).is_empty(),
                "{flavor:?}"
            );
        }
    }

    #[test]
    fn dates_are_checked() {
        assert_eq!(Date::parse("2026_13_01", "yyyy_MM_dd"), None);
        assert_eq!(Date::parse("2026_1_01", "yyyy_MM_dd"), None);
        assert_eq!(Date::parse("2026_01_01x", "yyyy_MM_dd"), None);
        assert_eq!(
            Date::parse("2026-1-5", "yyyy-M-d"),
            Some(Date {
                year: 2026,
                month: 1,
                day: 5
            })
        );
        // 2000-01-01 was a Saturday.
        assert_eq!(
            Date {
                year: 2000,
                month: 1,
                day: 1
            }
            .weekday(),
            5
        );
    }
}
