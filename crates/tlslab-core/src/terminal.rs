//! Text from outside tlslab made safe to show on a terminal.
//!
//! A server name in a captured ClientHello, a target's `Server` header, a certificate's
//! subject, a peer's error text, a label from an experiment file or a store, a file name:
//! any of them can hold an escape sequence (which a terminal obeys: colours, a moved cursor,
//! a changed window title, a rewritten line) or a line break (which forges a line of
//! tlslab's own output). Every printer shows such text through [`escape`], at the point it
//! is rendered for a person: the store, `--json` (whose strings JSON escapes) and exports
//! keep the bytes as received.
//!
//! What changes, and what does not:
//!
//! - line feed, carriage return and tab show as `\n`, `\r`, `\t`;
//! - every other C0 control, DEL and every C1 control show as `\x1b`, `\x7f`, `\x9b`;
//! - the Unicode characters that reorder or break lines in a terminal that honours them
//!   (bidirectional embeddings, overrides, isolates and marks; the line and paragraph
//!   separators) show as `\u{202e}`;
//! - everything else, printable Unicode included, stays as it is. A backslash stays too: the
//!   point is a terminal that obeys nothing it is shown, not a reversible encoding, and so
//!   escaping twice changes nothing (`escape(escape(x)) == escape(x)`), which lets a printer
//!   escape a whole line of its own words around text a library already escaped.
//!
//! Hand-written because the standard library's `escape_debug` also doubles backslashes and
//! escapes quotes (a label quoted as `'…'` would show `\'`), and crates such as
//! strip-ansi-escapes remove sequences, which hides what a peer sent rather than showing it.

use std::borrow::Cow;
use std::fmt;

/// `text` as a terminal should show it: controls and line breaks visible as escapes (see the
/// module's documentation), everything else unchanged. Borrowed when nothing needed escaping.
///
/// ```
/// use tlslab_core::terminal::escape;
///
/// assert_eq!(escape("evil\u{1b}[31m\nerror: forged"), "evil\\x1b[31m\\nerror: forged");
/// assert_eq!(escape("bücher.example 🙂"), "bücher.example 🙂");
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        push_escaped(&mut escaped, character);
    }
    Cow::Owned(escaped)
}

/// Each line of `text` through [`escape`], the line feeds between them kept: for text whose
/// lines are tlslab's own layout (a summary, an error with its hint) and whose fields were
/// escaped where they were put in. What a field brought in unescaped cannot reach the
/// terminal as a control; only its line breaks would stay, which is why fields are escaped
/// first.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|character| character != '\n' && needs_escape(character))
    {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        if character == '\n' {
            escaped.push('\n');
        } else {
            push_escaped(&mut escaped, character);
        }
    }
    Cow::Owned(escaped)
}

/// [`escape`] as a `Display`, for text put into a `format!`:
/// `format!("issuer {}", Escaped(&certificate.issuer))`.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.pad(&escape(self.0))
    }
}

/// Whether a terminal could take `character` as something other than a glyph.
fn needs_escape(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            // Arabic letter mark, left-to-right and right-to-left marks.
            '\u{061c}' | '\u{200e}' | '\u{200f}'
            // Line and paragraph separators.
            | '\u{2028}' | '\u{2029}'
            // Embeddings, pop, overrides.
            | '\u{202a}'..='\u{202e}'
            // Isolates and their pop.
            | '\u{2066}'..='\u{2069}'
        )
}

fn push_escaped(out: &mut String, character: char) {
    use std::fmt::Write as _;
    match character {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        character if needs_escape(character) => {
            let code = u32::from(character);
            let _ = if code <= 0xff {
                write!(out, "\\x{code:02x}")
            } else {
                write!(out, "\\u{{{code:04x}}}")
            };
        }
        character => out.push(character),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_show_as_escapes_and_printable_text_stays() {
        assert_eq!(escape("plain text"), "plain text");
        assert!(matches!(escape("plain text"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}]0;title\u{7}b"), "a\\x1b]0;title\\x07b");
        assert_eq!(escape("one\ntwo\r\tthree"), "one\\ntwo\\r\\tthree");
        assert_eq!(escape("\u{0}\u{7f}\u{85}\u{9b}"), "\\x00\\x7f\\x85\\x9b");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape("x\u{2028}y"), "x\\u{2028}y");
        // Printable Unicode, quotes and backslashes are shown as they are.
        for text in [
            "ünïcödé",
            "日本語",
            "🙂",
            "'quoted' \"too\"",
            "C:\\path",
            "€",
        ] {
            assert_eq!(escape(text), text);
        }
    }

    #[test]
    fn lines_keep_their_breaks_and_nothing_else() {
        assert_eq!(
            escape_lines("first \u{1b}[2J\nsecond\r\n"),
            "first \\x1b[2J\nsecond\\r\n"
        );
        assert!(matches!(escape_lines("a\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_display_pads_what_it_escaped() {
        assert_eq!(format!("[{:<8}]", Escaped("a\u{1b}")), "[a\\x1b   ]");
    }

    proptest::proptest! {
        /// Nothing escaped holds a control, and escaping again changes nothing.
        #[test]
        fn escaped_text_holds_no_control_and_is_a_fixed_point(text in "\\PC*|[\\x00-\\x{a0}\\x{2028}\\x{202e}]*") {
            let once = escape(&text).into_owned();
            proptest::prop_assert!(!once.chars().any(needs_escape), "{:?}", once);
            proptest::prop_assert_eq!(escape(&once).into_owned(), once.clone());
            let lines = escape_lines(&text).into_owned();
            proptest::prop_assert!(!lines.chars().any(|c| c != '\n' && needs_escape(c)));
            proptest::prop_assert_eq!(lines.replace('\n', "\\n"), once);
        }
    }
}
