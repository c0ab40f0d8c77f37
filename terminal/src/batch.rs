//! The state of one batch on screen: which question, where the cursor is, what is checked and
//! typed, and how keys change it. Pure: no terminal, so every key path is unit-tested.

use std::sync::Arc;

use user_questions::{
    AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionIntent, AskUserQuestionItem,
};

/// The suffix that marks a recommended option (§2).
pub(crate) const RECOMMENDED_SUFFIX: &str = " (Recommended)";

/// One row of a question's list, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The option at this index of the question's `options`.
    Option(usize),
    /// Free text ("Other", or the answer itself for a question without options).
    Other,
    /// Skip the question (`selected: []`).
    Skip,
}

/// A key, already translated from the terminal's event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Up,
    Down,
    Home,
    End,
    /// Back to the previous question (left arrow, shift-tab).
    Back,
    Enter,
    Backspace,
    /// Clear the typed text (ctrl-u).
    ClearText,
    PageUp,
    PageDown,
    /// Ask for more time (ctrl-t anywhere; `t` where it is not typed into a text field).
    MoreTime,
    /// A printable character, including space and digits.
    Char(char),
}

/// What a key did to the batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The state changed (or a notice was set): draw again.
    Redraw,
    /// Every question is answered and the user submitted.
    Submit(AskUserQuestionAnswer),
    /// The user asked for more time (the ask's deadline, if it has one, moves).
    MoreTime,
}

/// The label that asks for changes in a plan review (§17); choosing it asks for feedback.
pub(crate) const REVISE: &str = "Revise";

/// The display order of a question's rows, and whether it is a plan review.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub entries: Vec<Entry>,
    /// The index (in `options`) of the option that approves a known intent (plan review).
    pub approve: Option<usize>,
}

/// Whether an intent is one this UI knows how to present.
pub(crate) fn known_intent(intent: &AskUserQuestionIntent) -> bool {
    intent.kind == AskUserQuestionIntent::PLAN_REVIEW
}

impl Layout {
    /// Options (for a plan review, the approve option first), then Other, then Skip.
    pub fn of(question: &AskUserQuestionItem) -> Layout {
        // A typed input (§24) is one line: empty skips.
        if question.input.is_some() {
            return Layout {
                entries: vec![Entry::Other],
                approve: None,
            };
        }
        let options = question.option_list();
        let approve = question
            .intent
            .as_ref()
            .filter(|intent| known_intent(intent))
            .and_then(|intent| options.iter().position(|o| o.label == intent.approve));
        let mut entries = Vec::with_capacity(options.len() + 2);
        if let Some(a) = approve {
            entries.push(Entry::Option(a));
        }
        entries.extend(
            (0..options.len())
                .filter(|&i| Some(i) != approve)
                .map(Entry::Option),
        );
        entries.push(Entry::Other);
        entries.push(Entry::Skip);
        Layout { entries, approve }
    }
}

/// A label without its ` (Recommended)` suffix, and whether it had one.
pub(crate) fn split_recommended(label: &str) -> (&str, bool) {
    match label.strip_suffix(RECOMMENDED_SUFFIX) {
        Some(rest) if !rest.trim().is_empty() => (rest, true),
        _ => (label, false),
    }
}

/// Free text as it goes into `custom`: trimmed, and absent when blank.
pub(crate) fn custom_text(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// The state of one question.
#[derive(Clone, Debug)]
pub(crate) struct QuestionState {
    pub layout: Layout,
    pub cursor: usize,
    /// Per option (by index in `options`): checked, in a multi-select question.
    pub checked: Vec<bool>,
    /// The free text typed on the Other row.
    pub text: String,
    /// The answer given the last time this question was confirmed.
    pub answered: Option<AskUserQuestionAnswerItem>,
    /// How many lines of the detail are scrolled away.
    pub detail_scroll: usize,
    /// In a plan review, the Revise option chosen: its feedback is being typed on the Other
    /// row (enter with no text revises without feedback).
    pub feedback_for: Option<usize>,
    /// Why the typed value was refused (the core's message), shown under the input line until
    /// the text changes.
    pub input_error: Option<String>,
}

impl QuestionState {
    fn new(question: &AskUserQuestionItem) -> QuestionState {
        QuestionState {
            layout: Layout::of(question),
            cursor: 0,
            checked: vec![false; question.option_list().len()],
            text: question
                .input
                .as_ref()
                .map(crate::typed::prefill)
                .unwrap_or_default(),
            answered: None,
            detail_scroll: 0,
            feedback_for: None,
            input_error: None,
        }
    }

    /// The row under the cursor.
    pub fn current_entry(&self) -> Entry {
        self.layout.entries[self.cursor]
    }

    /// Whether keys go to the free-text field (the cursor is on the Other row).
    pub fn editing(&self) -> bool {
        self.current_entry() == Entry::Other
    }

    /// Whether this question is a plan review (its approve option is known).
    pub fn plan_review(&self) -> bool {
        self.layout.approve.is_some()
    }
}

/// Whether `label` is a plan review's Revise option (with or without ` (Recommended)`).
pub(crate) fn is_revise(label: &str) -> bool {
    split_recommended(label).0 == REVISE
}

/// A batch of questions being answered, one at a time, with a review before submitting when
/// there are several.
#[derive(Clone, Debug)]
pub(crate) struct Batch {
    pub questions: Arc<[AskUserQuestionItem]>,
    pub states: Vec<QuestionState>,
    /// The question on screen; `questions.len()` means the review screen.
    pub current: usize,
    /// A one-line notice for the user (cleared by the next key).
    pub notice: Option<String>,
    /// The time left before the ask's deadline, in whole seconds rounded up, when it has one.
    pub time_left: Option<u64>,
}

impl Batch {
    /// A batch at its first question. `questions` is never empty (the seam checked it).
    pub fn new(questions: Arc<[AskUserQuestionItem]>) -> Batch {
        let states = questions.iter().map(QuestionState::new).collect();
        Batch {
            questions,
            states,
            current: 0,
            notice: None,
            time_left: None,
        }
    }

    /// Whether the review screen is showing.
    pub fn reviewing(&self) -> bool {
        self.current >= self.questions.len()
    }

    /// The answer as it stands (skips for questions not answered yet).
    pub fn answer(&self) -> AskUserQuestionAnswer {
        AskUserQuestionAnswer::new(
            self.questions
                .iter()
                .zip(&self.states)
                .map(|(q, s)| {
                    s.answered
                        .clone()
                        .unwrap_or_else(|| AskUserQuestionAnswerItem::skipped(q.id.clone()))
                })
                .collect(),
        )
    }

    /// Applies a key. Esc and ctrl-c (cancel) are handled by the caller.
    pub fn handle(&mut self, key: Key) -> Option<Step> {
        self.notice = None;
        if key == Key::MoreTime {
            return Some(Step::MoreTime);
        }
        if self.reviewing() {
            return self.handle_review(key);
        }
        let i = self.current;
        let question = &self.questions[i];
        let multi = question.is_multi_select();
        let state = &mut self.states[i];
        let rows = state.layout.entries.len();
        let editing = state.editing();
        if matches!(key, Key::Up | Key::Down | Key::Home | Key::End) {
            state.feedback_for = None;
        }
        if editing && matches!(key, Key::Backspace | Key::ClearText | Key::Char(_)) {
            state.input_error = None;
        }
        match key {
            Key::MoreTime => return Some(Step::MoreTime),
            Key::Up => state.cursor = (state.cursor + rows - 1) % rows,
            Key::Down => state.cursor = (state.cursor + 1) % rows,
            Key::Home => state.cursor = 0,
            Key::End => state.cursor = rows - 1,
            Key::PageUp => state.detail_scroll = state.detail_scroll.saturating_sub(5),
            Key::PageDown => state.detail_scroll += 5,
            Key::Back => return self.back(),
            Key::Enter => return self.confirm(),
            Key::Backspace if editing => {
                state.text.pop();
            }
            Key::ClearText if editing => state.text.clear(),
            Key::Char(c) if editing => {
                if !c.is_control() {
                    state.text.push(c);
                }
            }
            Key::Backspace | Key::ClearText => {}
            Key::Char('t') => return Some(Step::MoreTime),
            Key::Char('k') => state.cursor = (state.cursor + rows - 1) % rows,
            Key::Char('j') => state.cursor = (state.cursor + 1) % rows,
            Key::Char('h') => return self.back(),
            Key::Char(' ') => {
                if !multi {
                    return self.confirm();
                }
                match state.current_entry() {
                    Entry::Option(o) => state.checked[o] = !state.checked[o],
                    Entry::Skip => return self.confirm(),
                    Entry::Other => {}
                }
            }
            Key::Char(c) => {
                let n = c.to_digit(10).map(|d| d as usize)?;
                if n == 0 || n > rows {
                    self.notice = Some(format!("{n} is not a choice here: 1-{rows}"));
                    return Some(Step::Redraw);
                }
                state.cursor = n - 1;
                match state.current_entry() {
                    Entry::Option(o) if multi => state.checked[o] = !state.checked[o],
                    Entry::Option(_) | Entry::Skip => return self.confirm(),
                    Entry::Other => {}
                }
            }
        }
        Some(Step::Redraw)
    }

    /// Pasted text: added to the text row under the cursor, its line breaks (and other
    /// control characters) as spaces. A paste never confirms or picks anything; elsewhere than
    /// on a text row it is left out, with a notice.
    pub fn paste(&mut self, text: &str) -> Step {
        self.notice = None;
        let editing = !self.reviewing() && self.states[self.current].editing();
        if !editing {
            self.notice = Some("Paste on a text row (Other): nothing was pasted here.".into());
            return Step::Redraw;
        }
        let state = &mut self.states[self.current];
        state.input_error = None;
        let mut after_break = false;
        for c in text.chars() {
            if c == '\r' || c == '\n' {
                if !after_break {
                    state.text.push(' ');
                }
                after_break = true;
                continue;
            }
            after_break = false;
            state.text.push(if c.is_control() { ' ' } else { c });
        }
        Step::Redraw
    }

    fn back(&mut self) -> Option<Step> {
        if self.current == 0 {
            self.notice = Some("This is the first question.".into());
        } else {
            self.current -= 1;
        }
        Some(Step::Redraw)
    }

    /// Confirms the row under the cursor (and, in multi-select, the checked options).
    fn confirm(&mut self) -> Option<Step> {
        let i = self.current;
        let question = &self.questions[i];
        let state = &mut self.states[i];
        let options = question.option_list();
        let id = question.id.clone();
        let item = match state.current_entry() {
            // A typed input (§24): the core checks the value; a refused one stays, with why.
            Entry::Other if question.input.is_some() => {
                match crate::typed::answer(question, &state.text) {
                    Ok(Some(item)) => item,
                    Ok(None) => AskUserQuestionAnswerItem::skipped(id),
                    Err(reason) => {
                        state.input_error = Some(reason);
                        return Some(Step::Redraw);
                    }
                }
            }
            // A plan review's Revise asks for feedback first, on the Other row.
            Entry::Option(o)
                if state.plan_review()
                    && !question.is_multi_select()
                    && is_revise(&options[o].label)
                    && state.feedback_for.is_none() =>
            {
                state.feedback_for = Some(o);
                state.cursor = state
                    .layout
                    .entries
                    .iter()
                    .position(|e| *e == Entry::Other)
                    .unwrap_or(state.cursor);
                return Some(Step::Redraw);
            }
            Entry::Other if state.feedback_for.is_some() && custom_text(&state.text).is_none() => {
                let o = state.feedback_for.unwrap_or_default();
                AskUserQuestionAnswerItem::new(id, vec![options[o].label.clone()], None)
            }
            Entry::Skip => {
                state.checked.iter_mut().for_each(|c| *c = false);
                state.text.clear();
                AskUserQuestionAnswerItem::skipped(id)
            }
            Entry::Option(o) if !question.is_multi_select() => {
                AskUserQuestionAnswerItem::new(id, vec![options[o].label.clone()], None)
            }
            Entry::Other if !question.is_multi_select() => match custom_text(&state.text) {
                Some(text) => AskUserQuestionAnswerItem::new(id, Vec::new(), Some(text)),
                None => {
                    self.notice = Some(if options.is_empty() {
                        "Type an answer first, or choose Skip.".into()
                    } else {
                        "Type your answer first, or pick another row.".into()
                    });
                    return Some(Step::Redraw);
                }
            },
            Entry::Option(_) | Entry::Other => {
                let selected: Vec<String> = options
                    .iter()
                    .zip(&state.checked)
                    .filter(|(_, checked)| **checked)
                    .map(|(o, _)| o.label.clone())
                    .collect();
                let custom = custom_text(&state.text);
                if selected.is_empty() && custom.is_none() {
                    self.notice =
                        Some("Nothing selected: space checks an option, or choose Skip.".into());
                    return Some(Step::Redraw);
                }
                AskUserQuestionAnswerItem::new(id, selected, custom)
            }
        };
        state.answered = Some(item);
        self.current += 1;
        if self.questions.len() == 1 {
            return Some(Step::Submit(self.answer()));
        }
        Some(Step::Redraw)
    }

    fn handle_review(&mut self, key: Key) -> Option<Step> {
        let n = self.questions.len();
        match key {
            Key::Enter => return Some(Step::Submit(self.answer())),
            Key::Char('t') => return Some(Step::MoreTime),
            Key::Back | Key::Backspace | Key::Char('h') => self.current = n - 1,
            Key::Char(c) => match c.to_digit(10).map(|d| d as usize) {
                Some(d) if (1..=n).contains(&d) => self.current = d - 1,
                Some(d) => self.notice = Some(format!("{d} is not a question here: 1-{n}")),
                None => return None,
            },
            _ => return None,
        }
        Some(Step::Redraw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use user_questions::{AskUserQuestionOption, validate_answer};

    fn question(id: &str, labels: &[&str], multi: bool) -> AskUserQuestionItem {
        let mut q = AskUserQuestionItem::new(id, format!("{id}?"));
        q.options = Some(
            labels
                .iter()
                .map(|l| AskUserQuestionOption::new(*l, None))
                .collect(),
        );
        q.multi_select = multi.then_some(true);
        q
    }

    fn batch(questions: Vec<AskUserQuestionItem>) -> Batch {
        Batch::new(questions.into())
    }

    fn keys(b: &mut Batch, keys: &[Key]) -> Option<AskUserQuestionAnswer> {
        let mut last = None;
        for k in keys {
            if let Some(Step::Submit(a)) = b.handle(*k) {
                last = Some(a);
            }
        }
        if let Some(a) = &last {
            validate_answer(&b.questions, a).expect("the UI's answer fits its questions");
        }
        last
    }

    fn json(a: &AskUserQuestionAnswer) -> String {
        a.to_compact_json()
    }

    fn type_text(s: &str) -> Vec<Key> {
        s.chars().map(Key::Char).collect()
    }

    #[test]
    fn single_select_by_arrows_and_enter() {
        let mut b = batch(vec![question("pkg", &["pnpm", "npm", "yarn"], false)]);
        let a = keys(&mut b, &[Key::Down, Key::Down, Key::Up, Key::Enter]).unwrap();
        assert_eq!(json(&a), r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#);
    }

    #[test]
    fn single_select_by_number_and_by_j_k() {
        let mut b = batch(vec![question("pkg", &["pnpm", "npm", "yarn"], false)]);
        let a = keys(&mut b, &[Key::Char('3')]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"pkg","selected":["yarn"]}]}"#
        );
        let mut b = batch(vec![question("pkg", &["pnpm", "npm", "yarn"], false)]);
        let a = keys(
            &mut b,
            &[
                Key::Char('j'),
                Key::Char('j'),
                Key::Char('k'),
                Key::Char(' '),
            ],
        )
        .unwrap();
        assert_eq!(json(&a), r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#);
    }

    #[test]
    fn cursor_wraps_around() {
        let mut b = batch(vec![question("pkg", &["a", "b"], false)]);
        // rows: a, b, Other, Skip; up from the first row lands on Skip.
        let a = keys(&mut b, &[Key::Up, Key::Enter]).unwrap();
        assert_eq!(json(&a), r#"{"answers":[{"id":"pkg","selected":[]}]}"#);
    }

    #[test]
    fn single_select_other_overrides_the_choice() {
        let mut b = batch(vec![question("pkg", &["pnpm", "npm"], false)]);
        let mut k = vec![Key::Char('3')];
        k.extend(type_text("  bun 1jk "));
        k.push(Key::Enter);
        let a = keys(&mut b, &k).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"pkg","selected":[],"custom":"bun 1jk"}]}"#
        );
    }

    #[test]
    fn empty_other_does_not_confirm() {
        let mut b = batch(vec![question("pkg", &["pnpm"], false)]);
        assert_eq!(b.handle(Key::Char('2')), Some(Step::Redraw));
        assert_eq!(b.handle(Key::Char(' ')), Some(Step::Redraw));
        assert_eq!(b.handle(Key::Enter), Some(Step::Redraw));
        assert!(b.notice.is_some());
        assert_eq!(b.handle(Key::ClearText), Some(Step::Redraw));
        let a = keys(
            &mut b,
            &[Key::Char('x'), Key::Backspace, Key::Char('y'), Key::Enter],
        );
        assert_eq!(
            json(&a.unwrap()),
            r#"{"answers":[{"id":"pkg","selected":[],"custom":"y"}]}"#
        );
    }

    #[test]
    fn skip_is_selected_empty() {
        let mut b = batch(vec![question("pkg", &["pnpm", "npm"], false)]);
        let a = keys(&mut b, &[Key::Char('4')]).unwrap();
        assert_eq!(json(&a), r#"{"answers":[{"id":"pkg","selected":[]}]}"#);
    }

    #[test]
    fn multi_select_toggles_and_adds_custom() {
        let mut b = batch(vec![question(
            "ci",
            &["unit", "lint", "types", "e2e"],
            true,
        )]);
        let mut k = vec![
            Key::Char(' '),
            Key::Down,
            Key::Down,
            Key::Char(' '),
            Key::Char('2'),
            Key::Char('2'),
            Key::Char('4'),
            Key::Char('5'),
        ];
        k.extend(type_text("fuzz"));
        k.push(Key::Enter);
        let a = keys(&mut b, &k).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"ci","selected":["unit","types","e2e"],"custom":"fuzz"}]}"#
        );
    }

    #[test]
    fn multi_select_with_nothing_checked_asks_again_and_skip_clears() {
        let mut b = batch(vec![question("ci", &["unit", "lint"], true)]);
        assert_eq!(b.handle(Key::Enter), Some(Step::Redraw));
        assert!(b.notice.as_deref().unwrap().contains("Nothing selected"));
        let a = keys(&mut b, &[Key::Char(' '), Key::End, Key::Enter]).unwrap();
        assert_eq!(json(&a), r#"{"answers":[{"id":"ci","selected":[]}]}"#);
        assert!(b.states[0].checked.iter().all(|c| !c));
    }

    #[test]
    fn back_revisits_and_review_submits() {
        let mut b = batch(vec![
            question("a", &["a1", "a2"], false),
            question("b", &["b1", "b2"], false),
        ]);
        assert_eq!(b.handle(Key::Back), Some(Step::Redraw));
        assert!(b.notice.is_some());
        assert_eq!(b.handle(Key::Char('1')), Some(Step::Redraw));
        assert_eq!(b.current, 1);
        assert_eq!(b.handle(Key::Back), Some(Step::Redraw));
        assert_eq!(b.current, 0);
        assert_eq!(b.handle(Key::Char('2')), Some(Step::Redraw));
        assert_eq!(b.handle(Key::Char('2')), Some(Step::Redraw));
        assert!(b.reviewing());
        // From the review: back to the last question, then a number jumps to a question.
        assert_eq!(b.handle(Key::Back), Some(Step::Redraw));
        assert_eq!(b.current, 1);
        assert_eq!(b.handle(Key::Enter), Some(Step::Redraw));
        assert!(b.reviewing());
        assert_eq!(b.handle(Key::Char('1')), Some(Step::Redraw));
        assert_eq!(b.current, 0);
        let a = keys(&mut b, &[Key::Char('1'), Key::Enter, Key::Enter]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"a","selected":["a1"]},{"id":"b","selected":["b2"]}]}"#
        );
    }

    #[test]
    fn plan_review_puts_approve_first() {
        let mut q = question("plan", &["Revise", "Approve", "Reject"], false);
        q.detail = Some("the plan".into());
        q.intent = Some(AskUserQuestionIntent::new("plan-review", "Approve"));
        let layout = Layout::of(&q);
        assert_eq!(layout.approve, Some(1));
        assert_eq!(
            layout.entries,
            vec![
                Entry::Option(1),
                Entry::Option(0),
                Entry::Option(2),
                Entry::Other,
                Entry::Skip
            ]
        );
        let mut b = batch(vec![q.clone()]);
        let a = keys(&mut b, &[Key::Enter]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"plan","selected":["Approve"]}]}"#
        );
        // An unknown kind renders the generic list.
        q.intent.as_mut().unwrap().kind = "deploy-gate".into();
        let layout = Layout::of(&q);
        assert_eq!(layout.approve, None);
        assert_eq!(layout.entries[0], Entry::Option(0));
    }

    fn review_question() -> AskUserQuestionItem {
        let mut q = question("plan", &["Approve", "Revise", "Reject"], false);
        q.detail = Some("the plan".into());
        q.intent = Some(AskUserQuestionIntent::new("plan-review", "Approve"));
        q
    }

    #[test]
    fn plan_review_revise_asks_for_feedback() {
        // Revise, then feedback text: free text (a `revise` review with that feedback).
        let mut b = batch(vec![review_question()]);
        assert_eq!(b.handle(Key::Char('2')), Some(Step::Redraw));
        assert_eq!(b.states[0].feedback_for, Some(1));
        assert!(b.states[0].editing(), "the cursor is on the feedback row");
        let mut k = type_text("split step 2");
        k.push(Key::Enter);
        let a = keys(&mut b, &k).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"plan","selected":[],"custom":"split step 2"}]}"#
        );
        // Revise, then enter alone: Revise without feedback.
        let mut b = batch(vec![review_question()]);
        let a = keys(&mut b, &[Key::Down, Key::Enter, Key::Enter]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"plan","selected":["Revise"]}]}"#
        );
        // Moving away leaves the feedback; Reject then answers at once.
        let mut b = batch(vec![review_question()]);
        b.handle(Key::Char('2'));
        b.handle(Key::Up);
        assert_eq!(b.states[0].feedback_for, None);
        let a = keys(&mut b, &[Key::Enter]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"plan","selected":["Reject"]}]}"#
        );
        // Outside a plan review, an option named Revise is an ordinary option.
        let mut b = batch(vec![question("q", &["Keep", "Revise"], false)]);
        let a = keys(&mut b, &[Key::Char('2')]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"q","selected":["Revise"]}]}"#
        );
    }

    #[test]
    fn t_asks_for_more_time_except_while_typing() {
        let mut b = batch(vec![question("pkg", &["pnpm", "npm"], false)]);
        assert_eq!(b.handle(Key::Char('t')), Some(Step::MoreTime));
        assert_eq!(b.handle(Key::MoreTime), Some(Step::MoreTime));
        // On the Other row `t` is text; ctrl-t (MoreTime) still asks.
        b.handle(Key::Char('3'));
        assert_eq!(b.handle(Key::Char('t')), Some(Step::Redraw));
        assert_eq!(b.states[0].text, "t");
        assert_eq!(b.handle(Key::MoreTime), Some(Step::MoreTime));
        assert_eq!(b.states[0].text, "t");
    }

    #[test]
    fn a_paste_is_text_on_a_text_row_and_never_picks_or_confirms() {
        let mut b = batch(vec![
            question("a", &["x", "y"], false),
            question("b", &["x", "y"], false),
        ]);
        // On an option row: nothing is pasted, nothing is picked.
        assert_eq!(b.paste("2\r1 \n"), Step::Redraw);
        assert_eq!((b.current, b.states[0].cursor), (0, 0));
        assert!(b.states[0].text.is_empty() && b.states[0].answered.is_none());
        assert!(b.notice.as_deref().unwrap().contains("nothing was pasted"));
        // On the Other row: line breaks (\r, \n, \r\n) become one space each, controls spaces.
        b.handle(Key::Char('3'));
        assert_eq!(b.paste("one\r\ntwo\n\nthree\tfour\u{1b}[A 2"), Step::Redraw);
        assert_eq!(b.states[0].text, "one two three four [A 2");
        assert_eq!(b.current, 0, "a paste does not confirm");
        assert!(b.notice.is_none());
        let a = keys(&mut b, &[Key::Enter, Key::Char('1')]);
        assert!(a.is_none());
        assert!(b.reviewing());
        // On the review screen nothing is pasted either.
        assert_eq!(b.paste("\r"), Step::Redraw);
        assert!(b.reviewing());
        let a = keys(&mut b, &[Key::Enter]).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"a","selected":[],"custom":"one two three four [A 2"},{"id":"b","selected":["x"]}]}"#
        );
    }

    #[test]
    fn question_without_options_takes_text() {
        let mut b = batch(vec![AskUserQuestionItem::new("name", "Name?")]);
        assert!(b.states[0].editing());
        let mut k = type_text("j k 1");
        k.push(Key::Enter);
        let a = keys(&mut b, &k).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"name","selected":[],"custom":"j k 1"}]}"#
        );
    }

    fn typed(id: &str, input: serde_json::Value) -> AskUserQuestionItem {
        let mut q = AskUserQuestionItem::new(id, format!("{id}?"));
        q.input = Some(serde_json::from_value(input).unwrap());
        q
    }

    #[test]
    fn a_typed_input_is_checked_before_it_is_accepted() {
        let mut b = batch(vec![
            typed(
                "n",
                serde_json::json!({"kind": "integer", "minimum": 1, "maximum": 10}),
            ),
            typed(
                "ok",
                serde_json::json!({"kind": "boolean", "default": true}),
            ),
            typed("pw", serde_json::json!({"kind": "secret"})),
            typed("skip", serde_json::json!({"kind": "text", "default": "x"})),
        ]);
        assert!(b.states[0].editing());
        // `j`, `t` and digits are typed text here.
        let mut k = type_text("1t");
        k.push(Key::Enter);
        assert!(keys(&mut b, &k).is_none());
        assert_eq!(b.current, 0, "a refused value stays");
        assert_eq!(
            b.states[0].input_error.as_deref(),
            Some("question n value must be an integer")
        );
        b.handle(Key::Backspace);
        assert_eq!(b.states[0].input_error, None, "an edit clears the reason");
        b.handle(Key::Char('1'));
        b.handle(Key::Enter);
        assert_eq!(
            b.states[0].input_error.as_deref(),
            Some("question n value must be at most 10")
        );
        b.handle(Key::ClearText);
        let mut k = type_text("7");
        k.push(Key::Enter);
        // The default is in the line: enter takes it.
        assert_eq!(b.states[1].text, "y");
        k.push(Key::Enter);
        k.extend(type_text("s3cr3t"));
        k.push(Key::Enter);
        // Erasing a default skips.
        k.push(Key::ClearText);
        k.push(Key::Enter);
        k.push(Key::Enter);
        let a = keys(&mut b, &k).unwrap();
        assert_eq!(
            json(&a),
            r#"{"answers":[{"id":"n","selected":[],"value":7},{"id":"ok","selected":[],"value":true},{"id":"pw","selected":[],"value":"s3cr3t"},{"id":"skip","selected":[]}]}"#
        );
    }

    #[test]
    fn recommended_suffix_is_split() {
        assert_eq!(split_recommended("pnpm (Recommended)"), ("pnpm", true));
        assert_eq!(split_recommended("pnpm"), ("pnpm", false));
        assert_eq!(
            split_recommended(" (Recommended)"),
            (" (Recommended)", false)
        );
    }
}
