//! What a batch looks like: styled lines for a given terminal size. Pure (no terminal), so
//! layout, wrapping and fitting are unit-tested; [`crate::screen`] paints the lines.

use crossterm::style::{Attribute, Color, ContentStyle};
use unicode_width::UnicodeWidthChar;
use user_questions::{AskUserQuestionAnswerItem, AskUserQuestionItem};

use crate::batch::{Batch, Entry, QuestionState, split_recommended};

/// A run of text in one style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub text: String,
    pub style: ContentStyle,
}

/// One screen row.
pub(crate) type Line = Vec<Span>;

/// The plain text of a line (for tests and the line prompts).
#[cfg(test)]
pub(crate) fn plain(line: &Line) -> String {
    line.iter().map(|s| s.text.as_str()).collect()
}

fn style() -> ContentStyle {
    ContentStyle::new()
}
fn fg(color: Color) -> ContentStyle {
    ContentStyle {
        foreground_color: Some(color),
        ..style()
    }
}
fn with(mut s: ContentStyle, attribute: Attribute) -> ContentStyle {
    s.attributes.set(attribute);
    s
}
fn bold() -> ContentStyle {
    with(style(), Attribute::Bold)
}
fn dim() -> ContentStyle {
    with(style(), Attribute::Dim)
}
fn span(text: impl Into<String>, style: ContentStyle) -> Span {
    Span {
        text: text.into(),
        style,
    }
}

const ACCENT: Color = Color::Cyan;
const GOOD: Color = Color::Green;
const WARN: Color = Color::Yellow;
const BAD: Color = Color::Red;

/// Word-wraps styled text to `width` columns. The first row starts with `first`, later rows
/// with `rest` (a hanging indent). `\n` starts a new row; a word longer than a row is cut.
pub(crate) fn wrap(spans: &[Span], width: usize, first: &[Span], rest: &[Span]) -> Vec<Line> {
    let prefix_width = |p: &[Span]| p.iter().map(|s| text_width(&s.text)).sum::<usize>();
    let cells: Vec<(char, ContentStyle)> = spans
        .iter()
        .flat_map(|s| s.text.chars().map(move |c| (c, s.style)))
        .collect();
    let mut out: Vec<Line> = Vec::new();
    let mut row: Vec<(char, ContentStyle)> = Vec::new();
    let mut row_width = 0;
    let mut limit = width.saturating_sub(prefix_width(first)).max(1);
    let flush = |out: &mut Vec<Line>, row: &mut Vec<(char, ContentStyle)>| {
        let prefix = if out.is_empty() { first } else { rest };
        let mut line: Line = prefix.to_vec();
        line.extend(cells_to_spans(row));
        out.push(line);
        row.clear();
    };
    for (p, paragraph) in split_cells(&cells, '\n').into_iter().enumerate() {
        if p > 0 {
            flush(&mut out, &mut row);
            row_width = 0;
            limit = width.saturating_sub(prefix_width(rest)).max(1);
        }
        // Leading white space of a paragraph is kept (indented lists); a run of spaces is
        // written only between two words of the same row.
        let mut pending_space: Vec<(char, ContentStyle)> = Vec::new();
        let mut at_paragraph_start = true;
        for token in tokens(paragraph) {
            let is_space = token.first().is_some_and(|(c, _)| *c == ' ');
            let w: usize = token.iter().map(|(c, _)| char_width(*c)).sum();
            if is_space {
                if at_paragraph_start {
                    let keep = w.min(limit.saturating_sub(1));
                    row.extend_from_slice(&token[..keep]);
                    row_width = keep;
                } else if row_width > 0 {
                    pending_space = token;
                }
                at_paragraph_start = false;
                continue;
            }
            at_paragraph_start = false;
            let space_width = pending_space.len();
            if row_width + space_width + w <= limit {
                row.append(&mut pending_space);
                row.extend_from_slice(&token);
                row_width += space_width + w;
                continue;
            }
            pending_space.clear();
            if row_width > 0 {
                flush(&mut out, &mut row);
                limit = width.saturating_sub(prefix_width(rest)).max(1);
            }
            // The word alone: cut it when it is wider than a row.
            let mut rest_of_word = token;
            loop {
                let mut taken = 0;
                let mut taken_width = 0;
                for (c, _) in &rest_of_word {
                    let cw = char_width(*c);
                    if taken_width + cw > limit && taken > 0 {
                        break;
                    }
                    taken += 1;
                    taken_width += cw;
                }
                row.extend_from_slice(&rest_of_word[..taken]);
                row_width = taken_width;
                rest_of_word.drain(..taken);
                if rest_of_word.is_empty() {
                    break;
                }
                flush(&mut out, &mut row);
                limit = width.saturating_sub(prefix_width(rest)).max(1);
            }
        }
    }
    flush(&mut out, &mut row);
    out
}

fn split_cells(cells: &[(char, ContentStyle)], sep: char) -> Vec<&[(char, ContentStyle)]> {
    cells.split(|(c, _)| *c == sep).collect()
}

/// Alternating runs of spaces and of non-spaces.
fn tokens(cells: &[(char, ContentStyle)]) -> Vec<Vec<(char, ContentStyle)>> {
    let mut out: Vec<Vec<(char, ContentStyle)>> = Vec::new();
    for &(c, s) in cells {
        let c = if c == '\t' { ' ' } else { c };
        let space = c == ' ';
        match out.last_mut() {
            Some(last) if last.first().is_some_and(|(l, _)| (*l == ' ') == space) => {
                last.push((c, s))
            }
            _ => out.push(vec![(c, s)]),
        }
    }
    out
}

fn cells_to_spans(cells: &[(char, ContentStyle)]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for &(c, s) in cells {
        match out.last_mut() {
            Some(last) if last.style == s => last.text.push(c),
            _ => out.push(span(c.to_string(), s)),
        }
    }
    out
}

/// A character as the screen shows it: a control character (C0, DEL, C1), which a terminal
/// would execute — an escape sequence moving the cursor or changing colours, a carriage
/// return, a bell — is shown as a visible symbol instead (`␛`, `␍`, `␇`, `␡`; C1 as `�`).
/// Every text is shown as text.
pub(crate) fn visible(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        '\u{80}'..='\u{9f}' => '\u{fffd}',
        _ => c,
    }
}

/// `text` with every control character made visible (see [`visible`]).
pub(crate) fn shown(text: &str) -> String {
    text.chars().map(visible).collect()
}

/// `text` for the line prompts: like [`shown`], but line breaks and tabs stay (a question of
/// several lines prints as several lines).
pub(crate) fn shown_keeping_lines(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == '\n' || c == '\t' {
                c
            } else {
                visible(c)
            }
        })
        .collect()
}

/// Columns `c` takes on screen, as [`visible`] shows it.
fn char_width(c: char) -> usize {
    visible(c).width().unwrap_or(0)
}

/// Display width of a string in columns.
pub(crate) fn text_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// A question's title for one-line notices: its header, else its text.
pub(crate) fn title(question: &AskUserQuestionItem) -> &str {
    question.header.as_deref().unwrap_or(&question.question)
}

/// A short description of one answer item, e.g. `pnpm (Recommended)` or `Lint + "fuzz"`; a
/// typed value as [`crate::typed::show_value`] shows it (a secret masked).
pub(crate) fn describe_item(
    question: Option<&AskUserQuestionItem>,
    item: &AskUserQuestionAnswerItem,
) -> String {
    let mut parts: Vec<String> = item.selected.clone();
    if let Some(custom) = &item.custom {
        parts.push(format!("\u{201c}{custom}\u{201d}"));
    }
    if let Some(value) = &item.value {
        parts.push(crate::typed::show_value(question, value));
    }
    if parts.is_empty() {
        "(skipped)".into()
    } else {
        parts.join(", ")
    }
}

/// Everything shown for one question, in sections, before fitting to the height.
struct Sections {
    head: Vec<Line>,
    detail: Vec<Line>,
    body: Vec<Line>,
    /// The body row of the cursor (kept visible when the body must be cut): on a text row,
    /// the row where the typed text ends.
    cursor_row: usize,
    foot: Vec<Line>,
}

fn header_line(batch: &Batch, question: Option<&AskUserQuestionItem>, waiting: usize) -> Line {
    let tag_style = with(with(fg(ACCENT), Attribute::Reverse), Attribute::Bold);
    let mut line = vec![span(" ", style())];
    match question {
        Some(q) => {
            let tag = q.header.as_deref().unwrap_or("Question");
            line.push(span(format!(" {tag} "), tag_style));
            if q.intent.as_ref().is_some_and(crate::batch::known_intent) {
                line.push(span(" plan review", fg(ACCENT)));
            }
        }
        None => line.push(span(" Review your answers ", tag_style)),
    }
    let n = batch.questions.len();
    if n > 1 {
        let position = if batch.reviewing() {
            format!("  {n} questions")
        } else {
            format!("  {}/{n}", batch.current + 1)
        };
        line.push(span(position, dim()));
    }
    if waiting > 0 {
        let more = if waiting == 1 {
            "  · 1 more batch waiting".to_string()
        } else {
            format!("  · {waiting} more batches waiting")
        };
        line.push(span(more, dim()));
    }
    line
}

fn detail_lines(question: &AskUserQuestionItem, plan: bool, width: usize) -> Vec<Line> {
    let Some(detail) = question.detail.as_deref() else {
        return Vec::new();
    };
    let bar = if plan {
        vec![span(" │ ", fg(ACCENT))]
    } else {
        vec![span("   ", style())]
    };
    let mut out = Vec::new();
    if plan {
        out.push(vec![
            span(" ╭─ ", fg(ACCENT)),
            span("Plan", with(fg(ACCENT), Attribute::Bold)),
        ]);
    }
    for raw in detail.lines() {
        let trimmed = raw.trim_start();
        let heading = trimmed.starts_with('#');
        let (text, s) = if heading {
            (trimmed.trim_start_matches('#').trim_start(), bold())
        } else if plan {
            (raw, style())
        } else {
            (raw, dim())
        };
        out.extend(wrap(&[span(text, s)], width, &bar, &bar));
    }
    if plan {
        out.push(vec![span(" ╰─", fg(ACCENT))]);
    }
    out
}

fn option_rows(
    question: &AskUserQuestionItem,
    state: &QuestionState,
    width: usize,
) -> (Vec<Line>, usize) {
    let multi = question.is_multi_select();
    let options = question.option_list();
    let mut rows = Vec::new();
    let mut cursor_row = 0;
    let answered = state.answered.as_ref();
    for (n, entry) in state.layout.entries.iter().enumerate() {
        let here = n == state.cursor;
        if here {
            cursor_row = rows.len();
        }
        let number = format!("{}. ", n + 1);
        let pointer = if here {
            span(" › ", with(fg(ACCENT), Attribute::Bold))
        } else {
            span("   ", style())
        };
        let label_style = if here {
            with(fg(ACCENT), Attribute::Bold)
        } else {
            style()
        };
        let mut first = vec![pointer, span(number.clone(), dim())];
        let checkbox = |on: bool| {
            if on {
                span("[x] ", fg(GOOD))
            } else {
                span("[ ] ", style())
            }
        };
        let indent_width = 3 + number.len() + if multi { 4 } else { 0 };
        let indent = vec![span(" ".repeat(indent_width), style())];
        let mut content: Vec<Span> = Vec::new();
        let mut description = None;
        match *entry {
            Entry::Option(o) => {
                let option = &options[o];
                if multi {
                    first.push(checkbox(state.checked[o]));
                }
                let (label, recommended) = split_recommended(&option.label);
                if Some(o) == state.layout.approve {
                    content.push(span("✔ ", with(fg(GOOD), Attribute::Bold)));
                    content.push(span(label, with(fg(GOOD), Attribute::Bold)));
                } else {
                    content.push(span(label, label_style));
                }
                if recommended {
                    content.push(span("  ★ Recommended", fg(GOOD)));
                }
                if Some(o) == state.layout.approve {
                    content.push(span("  approves the plan", fg(GOOD)));
                }
                if !multi && answered.is_some_and(|a| a.selected.first() == Some(&option.label)) {
                    content.push(span("  ← your answer", dim()));
                }
                description = option.description.as_deref();
            }
            Entry::Other => {
                if multi {
                    first.push(checkbox(crate::batch::custom_text(&state.text).is_some()));
                }
                // In a plan review free text is feedback: the plan is revised with it (§17).
                let name = if state.feedback_for.is_some() {
                    "Revise, with feedback"
                } else if state.plan_review() && !multi {
                    "Feedback"
                } else if options.is_empty() {
                    "Your answer"
                } else {
                    "Other"
                };
                content.push(span(name, label_style));
                if here {
                    content.push(span(": ", label_style));
                    content.push(span(state.text.clone(), style()));
                    content.push(caret());
                } else if state.text.is_empty() {
                    let placeholder = if state.plan_review() && !multi {
                        "  type what should change (revise)"
                    } else {
                        "  type your own answer"
                    };
                    content.push(span(placeholder, dim()));
                } else {
                    content.push(span(": ", label_style));
                    content.push(span(state.text.clone(), style()));
                }
            }
            Entry::Skip => {
                if multi {
                    first.push(span("    ", style()));
                }
                content.push(span("Skip", if here { label_style } else { dim() }));
                if !here {
                    content.push(span("  answer nothing", dim()));
                }
            }
        }
        rows.extend(wrap(&content, width, &first, &indent));
        if here && *entry == Entry::Other {
            // The text being typed: its end (where the person types) is what must show.
            cursor_row = rows.len() - 1;
        }
        if let Some(d) = description {
            let desc_indent = vec![span(" ".repeat(indent_width), style())];
            rows.extend(wrap(&[span(d, dim())], width, &desc_indent, &desc_indent));
        }
        if here
            && let Entry::Option(o) = *entry
            && let Some(preview) = options[o].preview.as_deref()
        {
            rows.extend(preview_lines(preview, indent_width, width));
        }
    }
    (rows, cursor_row)
}

/// An option's preview (§24) as preformatted text under it, in a bar: each line as it is (cut
/// into rows when wider than the screen, never reflowed); a unified diff (it has `@@` hunk
/// lines) with its added lines green and its removed lines red.
fn preview_lines(preview: &str, indent_width: usize, width: usize) -> Vec<Line> {
    use crate::typed::DiffLine;
    let diff = crate::typed::is_diff(preview);
    let bar = vec![span(" ".repeat(indent_width), style()), span("│ ", dim())];
    let mut out = Vec::new();
    for raw in preview.lines() {
        let s = if !diff {
            style()
        } else {
            match crate::typed::diff_line(raw) {
                DiffLine::Added => fg(GOOD),
                DiffLine::Removed => fg(BAD),
                DiffLine::Hunk => fg(ACCENT),
                DiffLine::Plain => style(),
            }
        };
        // Preformatted: cut at the width, never reflowed (a tab is shown as one space).
        let room = width.saturating_sub(indent_width + 2).max(1);
        let mut row = String::new();
        let mut used = 0;
        let mut any = false;
        for c in raw.chars() {
            let c = if c == '\t' { ' ' } else { c };
            let cw = char_width(c);
            if used + cw > room && used > 0 {
                let mut line = bar.clone();
                line.push(span(std::mem::take(&mut row), s));
                out.push(line);
                used = 0;
                any = true;
            }
            row.push(c);
            used += cw;
        }
        if !row.is_empty() || !any {
            let mut line = bar.clone();
            line.push(span(row, s));
            out.push(line);
        }
    }
    out
}

/// The rows of a question with a typed input (§24): what to type, the line being typed (a
/// secret as `•`), and under it why the last value was refused.
fn input_rows(
    input: &user_questions::AskUserQuestionInput,
    state: &QuestionState,
    width: usize,
) -> (Vec<Line>, usize) {
    let lead = vec![span("   ", style())];
    let mut rows = wrap(
        &[span(crate::typed::describe(input, true), dim())],
        width,
        &lead,
        &lead,
    );
    let typed = if input.kind == user_questions::InputKind::Secret {
        crate::typed::MASK
            .to_string()
            .repeat(state.text.chars().count())
    } else {
        state.text.clone()
    };
    let pointer = vec![span(" › ", with(fg(ACCENT), Attribute::Bold))];
    rows.extend(wrap(
        &[span(typed, style()), caret()],
        width,
        &pointer,
        &lead,
    ));
    let cursor_row = rows.len() - 1;
    if let Some(error) = &state.input_error {
        rows.extend(wrap(
            &[span(error.as_str(), fg(BAD))],
            width,
            &[span("   ✗ ", fg(BAD))],
            &[span("     ", style())],
        ));
    }
    (rows, cursor_row)
}

/// Where typed text goes: a reversed no-break space right after the text (the terminal's own
/// cursor is hidden). Not a plain space, which wrapping drops at the end of a row.
fn caret() -> Span {
    span("\u{a0}", with(style(), Attribute::Reverse))
}

fn hints(question: &AskUserQuestionItem, state: &QuestionState, batch: &Batch) -> String {
    // Number keys reach the first nine rows.
    let rows = state.layout.entries.len().min(9);
    let back = if batch.current > 0 {
        " · ← back"
    } else {
        ""
    };
    if state.feedback_for.is_some() {
        return format!(
            "type what should change · enter revise (no text: without feedback) · ↑↓ move{back} · esc cancel"
        );
    }
    if let Some(input) = &question.input {
        let what = if input.kind == user_questions::InputKind::File {
            "type a file's path"
        } else {
            "type a value"
        };
        return format!("{what} · enter confirm (empty: skip) · ctrl-u clear{back} · esc cancel");
    }
    if state.editing() {
        return format!("type your answer · enter confirm · ↑↓ move{back} · esc cancel");
    }
    if question.is_multi_select() {
        format!("↑↓ move · space or 1-{rows} toggle · enter confirm{back} · esc cancel")
    } else {
        format!("↑↓ move · 1-{rows} pick · enter confirm{back} · esc cancel")
    }
}

fn question_sections(batch: &Batch, width: usize, waiting: usize) -> Sections {
    let question = &batch.questions[batch.current];
    let state = &batch.states[batch.current];
    let plan = state.layout.approve.is_some();
    let mut head = vec![header_line(batch, Some(question), waiting), Vec::new()];
    let lead = vec![span(" ", style())];
    head.extend(wrap(
        &[span(question.question.as_str(), bold())],
        width,
        &lead,
        &lead,
    ));
    if question.is_multi_select() {
        head.push(vec![span(" Select all that apply.", dim())]);
    }
    head.push(Vec::new());
    let mut detail = detail_lines(question, plan, width);
    if !detail.is_empty() {
        detail.push(Vec::new());
    }
    let (body, cursor_row) = match &question.input {
        Some(input) => input_rows(input, state, width),
        None => option_rows(question, state, width),
    };
    let foot = footer(batch, hints(question, state, batch), state.editing(), width);
    Sections {
        head,
        detail,
        body,
        cursor_row,
        foot,
    }
}

/// A time left as `m:ss`, or `h:mm:ss` from an hour up.
pub(crate) fn clock(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The countdown of an ask with a deadline, e.g. `⏱ 4:59 left · t more time` (ctrl-t while
/// typing, where `t` is text).
fn countdown(seconds: u64, typing: bool) -> Line {
    let urgency = if seconds <= 10 {
        with(fg(Color::Red), Attribute::Bold)
    } else if seconds <= 60 {
        fg(WARN)
    } else {
        style()
    };
    let key = if typing { "ctrl-t" } else { "t" };
    vec![
        span(" ⏱ ", urgency),
        span(format!("{} left", clock(seconds)), urgency),
        span(format!(" · {key} more time"), dim()),
    ]
}

fn footer(batch: &Batch, hints: String, typing: bool, width: usize) -> Vec<Line> {
    let mut foot = vec![Vec::new()];
    let lead = vec![span(" ", style())];
    if let Some(seconds) = batch.time_left {
        foot.push(countdown(seconds, typing));
    }
    if let Some(notice) = &batch.notice {
        foot.extend(wrap(
            &[span(notice.as_str(), fg(WARN))],
            width,
            &lead,
            &lead,
        ));
    }
    foot.extend(wrap(&[span(hints, dim())], width, &lead, &lead));
    foot
}

fn review_sections(batch: &Batch, width: usize, waiting: usize) -> Sections {
    let head = vec![header_line(batch, None, waiting), Vec::new()];
    let answer = batch.answer();
    let mut body = Vec::new();
    for (n, (q, item)) in batch.questions.iter().zip(&answer.answers).enumerate() {
        let number = format!(" {}. ", n + 1);
        let indent = vec![span(" ".repeat(number.len() + 2), style())];
        body.extend(wrap(
            &[span(title(q), bold())],
            width,
            &[span(number, dim())],
            &indent,
        ));
        let style = if item.selected.is_empty() && item.custom.is_none() && item.value.is_none() {
            dim()
        } else {
            fg(GOOD)
        };
        body.extend(wrap(
            &[span("→ ", dim()), span(describe_item(Some(q), item), style)],
            width,
            &indent,
            &indent,
        ));
    }
    let n = batch.questions.len();
    let foot = footer(
        batch,
        format!("enter submit · 1-{n} change an answer · ← back · esc cancel"),
        false,
        width,
    );
    Sections {
        head,
        detail: Vec::new(),
        body,
        cursor_row: 0,
        foot,
    }
}

/// The rows of the screen for `batch` on a `width` × `height` terminal; at most `height` rows,
/// none wider than `width`. When it does not fit, the detail scrolls (page up/down) and then
/// the option list is cut around the cursor.
pub(crate) fn frame(batch: &Batch, width: u16, height: u16, waiting: usize) -> Vec<Line> {
    let columns = usize::from(width).saturating_sub(1).max(1);
    let mut lines = fit(batch, width, height, waiting);
    for line in &mut lines {
        clip(line, columns);
    }
    lines
}

/// Cuts a row to `width` columns, its control characters made [`visible`].
fn clip(line: &mut Line, width: usize) {
    let mut used = 0;
    for (i, s) in line.iter_mut().enumerate() {
        if s.text.chars().any(|c| visible(c) != c) {
            s.text = shown(&s.text);
        }
        let w = text_width(&s.text);
        if used + w <= width {
            used += w;
            continue;
        }
        let mut kept = String::new();
        for c in s.text.chars() {
            let cw = char_width(c);
            if used + cw > width {
                break;
            }
            used += cw;
            kept.push(c);
        }
        s.text = kept;
        line.truncate(i + 1);
        return;
    }
}

fn fit(batch: &Batch, width: u16, height: u16, waiting: usize) -> Vec<Line> {
    // The last column is left free: some terminals wrap when it is written.
    let width = usize::from(width).saturating_sub(1).max(10);
    let height = usize::from(height).max(1);
    let s = if batch.reviewing() {
        review_sections(batch, width, waiting)
    } else {
        question_sections(batch, width, waiting)
    };
    let avail = height.saturating_sub(s.head.len() + s.foot.len());
    let mut out = s.head;
    if s.detail.len() + s.body.len() <= avail {
        out.extend(s.detail);
        out.extend(s.body);
        out.extend(s.foot);
        return out;
    }
    // The options get their full height when the detail keeps at least three rows and its
    // scroll indicator; otherwise they share the room with the detail (a plan review must
    // show some of its plan), cut around the cursor.
    let (detail_rows, body_rows) = if s.detail.is_empty() {
        (0, avail)
    } else if avail.saturating_sub(s.body.len()) >= 4 {
        (avail - s.body.len(), s.body.len())
    } else {
        let body_rows = (avail / 2).max(avail.saturating_sub(s.detail.len() + 1));
        let detail_rows = avail - body_rows;
        if detail_rows >= 2 {
            (detail_rows, body_rows)
        } else {
            (0, avail)
        }
    };
    if detail_rows > 0 {
        // Scroll the detail, keeping one row for the scroll indicator.
        let shown = detail_rows - 1;
        let max_scroll = s.detail.len().saturating_sub(shown);
        let scroll = batch
            .states
            .get(batch.current)
            .map_or(0, |st| st.detail_scroll)
            .min(max_scroll);
        out.extend(s.detail[scroll..scroll + shown].iter().cloned());
        out.push(vec![span(
            format!(
                " ⋮ lines {}-{} of {} · PgUp/PgDn scroll",
                scroll + 1,
                scroll + shown,
                s.detail.len()
            ),
            dim(),
        )]);
    }
    let body_rows = body_rows.max(1);
    let start = s
        .cursor_row
        .saturating_sub(body_rows / 2)
        .min(s.body.len().saturating_sub(body_rows));
    out.extend(s.body.into_iter().skip(start).take(body_rows));
    out.extend(s.foot);
    // Smaller than the head and foot together: keep the bottom (the cursor and the keys).
    let excess = out.len().saturating_sub(height);
    out.drain(..excess);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use user_questions::{AskUserQuestionIntent, AskUserQuestionOption};

    fn text(lines: &[Line]) -> String {
        lines.iter().map(plain).collect::<Vec<_>>().join("\n")
    }

    fn plan_question() -> AskUserQuestionItem {
        let mut q = AskUserQuestionItem::new("plan", "Approve this plan?");
        q.header = Some("Plan".into());
        q.detail = Some("## Steps\n\n1. one\n2. two\n3. three\n4. four\n5. five".into());
        q.options = Some(vec![
            AskUserQuestionOption::new("Revise", Some("Change it first.".into())),
            AskUserQuestionOption::new("Approve (Recommended)", Some("Go.".into())),
        ]);
        q.intent = Some(AskUserQuestionIntent::new(
            "plan-review",
            "Approve (Recommended)",
        ));
        q
    }

    #[test]
    fn wrap_breaks_at_spaces_with_a_hanging_indent() {
        let lines = wrap(
            &[span("alpha beta gamma delta", style())],
            12,
            &[span("> ", style())],
            &[span("  ", style())],
        );
        assert_eq!(text(&lines), "> alpha beta\n  gamma\n  delta");
        let lines = wrap(&[span("abcdefghijkl", style())], 5, &[], &[]);
        assert_eq!(text(&lines), "abcde\nfghij\nkl");
        let lines = wrap(&[span("  - item\nnext", style())], 40, &[], &[]);
        assert_eq!(text(&lines), "  - item\nnext");
    }

    #[test]
    fn control_characters_in_a_question_are_shown_as_text() {
        let mut q = AskUserQuestionItem::new("pkg", "Pick\u{1b}[2J one");
        q.header = Some("Hdr\u{1b}]0;pwned\u{7}\nnext".into());
        q.detail = Some("\u{1b}[31mred\rCR".into());
        q.options = Some(vec![
            AskUserQuestionOption::new("x\u{1b}[9;77HMOVED", Some("\u{9b}2J\u{7f}".into())),
            AskUserQuestionOption::new("y", None),
        ]);
        let mut batch = Batch::new(vec![q].into());
        batch.notice = Some("note\u{1b}[1A".into());
        for (w, h) in [(80u16, 24u16), (12, 6), (1, 1)] {
            let lines = frame(&batch, w, h, 0);
            for line in &lines {
                for s in line {
                    assert!(
                        !s.text.chars().any(char::is_control),
                        "{w}x{h}: a control character is sent to the terminal: {:?}",
                        s.text
                    );
                }
                assert!(text_width(&plain(line)) <= usize::from(w.max(2) - 1));
            }
        }
        let t = text(&frame(&batch, 80, 24, 0));
        assert!(
            t.contains(" Hdr\u{241b}]0;pwned\u{2407}\u{240a}next "),
            "{t}"
        );
        assert!(t.contains("Pick\u{241b}[2J one"), "{t}");
        assert!(t.contains("\u{241b}[31mred\u{240d}CR"), "{t}");
        assert!(t.contains("1. x\u{241b}[9;77HMOVED"), "{t}");
        assert!(t.contains("\u{fffd}2J\u{2421}"), "{t}");
        assert!(t.contains("note\u{241b}[1A"), "{t}");
        // The symbols take their columns: a row of them is cut at the width like any text.
        let mut q = AskUserQuestionItem::new("q", "\u{1b}".repeat(200));
        q.header = Some("\u{7}".repeat(200));
        for line in frame(&Batch::new(vec![q].into()), 40, 24, 0) {
            assert!(text_width(&plain(&line)) < 40, "{:?}", plain(&line));
        }
    }

    #[test]
    fn long_typed_text_keeps_its_end_in_view() {
        let mut q = AskUserQuestionItem::new("pkg", "Which one?");
        q.options = Some(vec![
            AskUserQuestionOption::new("pnpm", Some("fast".into())),
            AskUserQuestionOption::new("npm", None),
        ]);
        let mut batch = Batch::new(vec![q].into());
        batch.handle(crate::batch::Key::Char('3'));
        let typed = format!("START {}THEEND", "word ".repeat(400));
        for c in typed.chars() {
            batch.handle(crate::batch::Key::Char(c));
        }
        for (w, h) in [(40u16, 12u16), (80, 24), (20, 8)] {
            let lines = frame(&batch, w, h, 0);
            let t = text(&lines);
            assert!(lines.len() <= usize::from(h), "{w}x{h}:\n{t}");
            // Where the person types is on screen: the end of the text with the caret after
            // it, and the keys.
            let end = lines
                .iter()
                .find(|l| plain(l).contains("THEEND"))
                .unwrap_or_else(|| panic!("{w}x{h}: the end of the text is cut off:\n{t}"));
            assert_eq!(
                end.last(),
                Some(&caret()),
                "{w}x{h}: no caret after the text"
            );
            assert!(t.contains("esc cancel"), "{w}x{h}:\n{t}");
        }
    }

    #[test]
    fn any_terminal_size_fits_and_a_long_list_keeps_the_cursor_in_view() {
        let mut q = AskUserQuestionItem::new("q", "日本語の質問 with a long text that wraps");
        q.header = Some("ヘッダー".into());
        q.detail = Some("詳細 e\u{301}\u{200b} 👩‍👩‍👧 ".repeat(20));
        q.options = Some(
            (1..=50)
                .map(|n| AskUserQuestionOption::new(format!("選択肢 {n}"), Some("説明".into())))
                .collect(),
        );
        let mut batch = Batch::new(vec![q].into());
        for _ in 0..39 {
            batch.handle(crate::batch::Key::Down);
        }
        for w in 1..=30u16 {
            for h in 1..=30u16 {
                let lines = frame(&batch, w, h, 2);
                assert!(
                    lines.len() <= usize::from(h),
                    "{w}x{h}: {} rows",
                    lines.len()
                );
                for line in &lines {
                    assert!(
                        text_width(&plain(line)) <= usize::from(w.max(2) - 1),
                        "{w}x{h}: {:?}",
                        plain(line)
                    );
                }
            }
        }
        let t = text(&frame(&batch, 80, 24, 0));
        assert!(t.contains("› 40. 選択肢 40"), "{t}");
        assert!(!t.contains(" 1. 選択肢 1\n"), "{t}");
    }

    #[test]
    fn wrap_counts_wide_characters() {
        let lines = wrap(&[span("日本語 日本語", style())], 8, &[], &[]);
        assert_eq!(text(&lines), "日本語\n日本語");
        for line in &lines {
            assert!(text_width(&plain(line)) <= 8);
        }
    }

    #[test]
    fn plan_review_frame_shows_the_plan_and_marks_approve_first() {
        let batch = Batch::new(vec![plan_question()].into());
        let lines = frame(&batch, 80, 40, 0);
        let t = text(&lines);
        assert!(t.contains(" Plan  plan review"), "{t}");
        assert!(t.contains("╭─ Plan"), "{t}");
        assert!(t.contains("│ Steps"), "{t}");
        let approve = t
            .find("1. ✔ Approve  ★ Recommended  approves the plan")
            .expect(&t);
        let revise = t.find("2. Revise").expect(&t);
        assert!(approve < revise);
        assert!(
            t.contains("3. Feedback  type what should change (revise)"),
            "{t}"
        );
        assert!(t.contains("4. Skip"), "{t}");
        assert!(t.contains("esc cancel"), "{t}");
        assert!(!t.contains("left ·"), "no deadline, no countdown: {t}");
    }

    #[test]
    fn a_deadline_shows_a_countdown() {
        assert_eq!(clock(0), "0:00");
        assert_eq!(clock(299), "4:59");
        assert_eq!(clock(3600 + 62), "1:01:02");
        let mut batch = Batch::new(vec![plan_question()].into());
        batch.time_left = Some(299);
        let t = text(&frame(&batch, 80, 40, 0));
        assert!(t.contains(" ⏱ 4:59 left · t more time"), "{t}");
        // While typing, `t` is text: ctrl-t asks.
        batch.handle(crate::batch::Key::Char('3'));
        let t = text(&frame(&batch, 80, 40, 0));
        assert!(t.contains(" ⏱ 4:59 left · ctrl-t more time"), "{t}");
        // The countdown stays on a small terminal.
        let t = text(&frame(&batch, 40, 10, 0));
        assert!(t.contains("4:59 left"), "{t}");
    }

    #[test]
    fn revise_in_a_plan_review_asks_for_feedback() {
        let mut batch = Batch::new(vec![plan_question()].into());
        // Revise is the second row (approve first).
        batch.handle(crate::batch::Key::Char('2'));
        let t = text(&frame(&batch, 100, 40, 0));
        assert!(t.contains("› 3. Revise, with feedback:"), "{t}");
        assert!(t.contains("type what should change · enter revise"), "{t}");
    }

    #[test]
    fn a_small_terminal_scrolls_the_detail_and_keeps_the_options() {
        let mut batch = Batch::new(vec![plan_question()].into());
        for height in [8u16, 12, 16] {
            for width in [20u16, 40, 80] {
                let lines = frame(&batch, width, height, 3);
                assert!(
                    lines.len() <= usize::from(height),
                    "{width}x{height}:\n{}",
                    text(&lines)
                );
                for line in &lines {
                    assert!(
                        text_width(&plain(line)) < usize::from(width),
                        "{width}x{height}"
                    );
                }
            }
        }
        let t = text(&frame(&batch, 80, 16, 0));
        assert!(t.contains("PgUp/PgDn"), "{t}");
        assert!(t.contains("› 1. ✔ Approve"), "{t}");
        batch.handle(crate::batch::Key::PageDown);
        let scrolled = text(&frame(&batch, 80, 16, 0));
        assert_ne!(t, scrolled);
        assert!(scrolled.contains("five"), "{scrolled}");
    }

    #[test]
    fn a_typed_input_shows_its_line_a_secret_masked_and_the_reason_it_was_refused() {
        let mut q = AskUserQuestionItem::new("pw", "The token?");
        q.input = Some(
            serde_json::from_value(serde_json::json!({"kind": "secret", "minLength": 8})).unwrap(),
        );
        let mut batch = Batch::new(vec![q].into());
        for c in "hunter2".chars() {
            batch.handle(crate::batch::Key::Char(c));
        }
        batch.handle(crate::batch::Key::Enter);
        let t = text(&frame(&batch, 80, 24, 0));
        assert!(
            t.contains("Secret (hidden as you type), at least 8 characters"),
            "{t}"
        );
        assert!(t.contains(" › •••••••\u{a0}"), "{t}");
        assert!(!t.contains("hunter"), "{t}");
        assert!(
            t.contains("✗ question pw value must be at least 8 characters long"),
            "{t}"
        );
        assert!(t.contains("enter confirm (empty: skip)"), "{t}");
    }

    #[test]
    fn a_focused_option_shows_its_preview_a_diff_in_colour() {
        let mut q = AskUserQuestionItem::new("fix", "Which fix?");
        q.options = Some(vec![
            AskUserQuestionOption::new("Patch", None)
                .with_preview("--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-old()\n+new()\n ctx\u{1b}[2J"),
            AskUserQuestionOption::new("Note", None).with_preview("# Title\n- item"),
        ]);
        let mut batch = Batch::new(vec![q].into());
        let lines = frame(&batch, 80, 24, 0);
        let t = text(&lines);
        assert!(t.contains("│ --- a/x.rs\n"), "{t}");
        assert!(t.contains("│  ctx\u{241b}[2J"), "{t}");
        assert!(
            !t.contains("# Title"),
            "only the focused option's preview: {t}"
        );
        let colour = |needle: &str| {
            lines
                .iter()
                .flatten()
                .find(|s| s.text == needle)
                .unwrap_or_else(|| panic!("{needle}: {t}"))
                .style
                .foreground_color
        };
        assert_eq!(colour("+new()"), Some(GOOD));
        assert_eq!(colour("-old()"), Some(BAD));
        assert_eq!(colour("+++ b/x.rs"), None);
        batch.handle(crate::batch::Key::Down);
        let lines = frame(&batch, 80, 24, 0);
        let t = text(&lines);
        assert!(t.contains("│ # Title\n") && t.contains("│ - item"), "{t}");
        assert!(!t.contains("+new()"), "{t}");
        // Not a diff: no colour.
        assert!(
            lines
                .iter()
                .flatten()
                .filter(|s| s.text == "- item")
                .all(|s| s.style.foreground_color.is_none())
        );
        // Narrow: the rows are cut, never wider than the screen.
        for line in frame(&batch, 12, 24, 0) {
            assert!(text_width(&plain(&line)) < 12, "{:?}", plain(&line));
        }
    }

    #[test]
    fn review_lists_every_answer() {
        let mut a = AskUserQuestionItem::new("a", "First?");
        a.options = Some(vec![AskUserQuestionOption::new("Yes", None)]);
        let b = AskUserQuestionItem::new("b", "Second?");
        let mut batch = Batch::new(vec![a, b].into());
        batch.handle(crate::batch::Key::Char('1'));
        batch.handle(crate::batch::Key::Down);
        batch.handle(crate::batch::Key::Enter);
        assert!(batch.reviewing());
        let t = text(&frame(&batch, 60, 20, 1));
        assert!(t.contains("Review your answers"), "{t}");
        assert!(t.contains("1 more batch waiting"), "{t}");
        assert!(t.contains("→ Yes"), "{t}");
        assert!(t.contains("→ (skipped)"), "{t}");
        assert!(t.contains("enter submit"), "{t}");
    }
}
