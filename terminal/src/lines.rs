//! The line-prompt fallback (no TTY, or `TERM=dumb`): numbered prompts written to a writer
//! (stderr), one answer line read per prompt (stdin). Pure state machine over lines, so the
//! protocol is unit-tested without any I/O.
//!
//! The protocol, per question:
//!
//! | line | meaning |
//! |---|---|
//! | `2` | option 2 (the numbers shown; a plan review lists its approve option first) |
//! | `1,3` or `1 3` | options 1 and 3 (multi-select only) |
//! | `o` (alone or in a list: `1,o`) | your own answer, typed on the next line |
//! | empty | skip the question (`selected: []`) |
//! | `b` | back to the previous question |
//! | `q`, or end of input | cancel the batch (`ASK_CANCELLED`) |
//! | `+` | more time, when the ask has a deadline (its time left is shown with each question) |
//!
//! A question without options takes the line itself as the answer (empty skips; `b` and `q`
//! still mean back and cancel). In a plan review, choosing Revise asks for feedback on the
//! next line (empty: revise without it). Anything else prints a `!` line and asks again.

use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use user_questions::{AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem};

use crate::batch::{Entry, Layout, custom_text, is_revise, known_intent};
use crate::render::{self, clock, shown_keeping_lines as shown};

/// An ask's deadline as the prompts see it.
pub(crate) struct Countdown {
    /// The whole seconds left, rounded up.
    pub left: Box<dyn Fn() -> u64 + Send>,
    /// Asks for more time; returns how much was added.
    pub more: Box<dyn Fn() -> Duration + Send>,
}

/// What the prompter needs next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineStep {
    /// Another line (a prompt was written).
    NeedLine,
    /// The batch is answered.
    Done(AskUserQuestionAnswer),
    /// The user cancelled (`q` or end of input).
    Cancel,
}

/// Answers one batch through line prompts.
pub(crate) struct LinePrompter {
    questions: Arc<[AskUserQuestionItem]>,
    layouts: Vec<Layout>,
    answers: Vec<Option<AskUserQuestionAnswerItem>>,
    current: usize,
    /// Set while waiting for the text of `o`: the options chosen with it.
    awaiting_text: Option<Vec<String>>,
    /// Set while waiting for a plan review's feedback: the Revise label.
    awaiting_feedback: Option<String>,
    /// The deadline, when the ask has one.
    countdown: Option<Countdown>,
}

impl LinePrompter {
    pub fn new(questions: Arc<[AskUserQuestionItem]>) -> LinePrompter {
        let layouts = questions.iter().map(Layout::of).collect();
        let answers = vec![None; questions.len()];
        LinePrompter {
            questions,
            layouts,
            answers,
            current: 0,
            awaiting_text: None,
            awaiting_feedback: None,
            countdown: None,
        }
    }

    /// Shows the time left with each question and takes `+` for more time.
    pub fn with_countdown(mut self, countdown: Option<Countdown>) -> LinePrompter {
        self.countdown = countdown;
        self
    }

    /// Writes the first question and its prompt.
    pub fn start(&mut self, out: &mut dyn Write) -> io::Result<()> {
        self.show_question(out)
    }

    fn options_in_order(&self) -> Vec<usize> {
        self.layouts[self.current]
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Option(o) => Some(*o),
                _ => None,
            })
            .collect()
    }

    fn show_question(&mut self, out: &mut dyn Write) -> io::Result<()> {
        let n = self.questions.len();
        let q = &self.questions[self.current];
        let layout = &self.layouts[self.current];
        let plan = layout.approve.is_some()
            || q.intent.as_ref().is_some_and(known_intent) && q.detail.is_some();
        writeln!(out)?;
        let position = format!("[{}/{n}]", self.current + 1);
        match &q.header {
            Some(h) => {
                let tag = if plan { " (plan review)" } else { "" };
                writeln!(out, "{position} {}{tag}", shown(h))?;
                writeln!(out, "{}", shown(&q.question))?;
            }
            None => writeln!(out, "{position} {}", shown(&q.question))?,
        }
        if let Some(detail) = &q.detail {
            if plan {
                writeln!(out, "  --- plan ---")?;
            }
            for line in detail.lines() {
                if line.trim().is_empty() {
                    writeln!(out, "  |")?;
                } else {
                    writeln!(out, "  | {}", shown(line))?;
                }
            }
            if plan {
                writeln!(out, "  --- end of plan ---")?;
            }
        }
        let options = q.option_list();
        let order = self.options_in_order();
        for (number, &o) in order.iter().enumerate() {
            let option = &options[o];
            write!(out, "  {}) {}", number + 1, shown(&option.label))?;
            if Some(o) == layout.approve {
                write!(out, " [approves the plan]")?;
            }
            if let Some(d) = &option.description {
                write!(out, " - {}", shown(d))?;
            }
            writeln!(out)?;
            if let Some(preview) = &option.preview {
                for line in preview.lines() {
                    writeln!(out, "     | {}", render::shown(line))?;
                }
            }
        }
        if let Some(input) = &q.input {
            writeln!(out, "  {}", crate::typed::describe(input, false))?;
            let default = crate::typed::prefill(input);
            if default.is_empty() {
                writeln!(out, "Type the value; empty to skip, b back, q cancel.")?;
            } else {
                writeln!(
                    out,
                    "Type the value; empty for the default ({}), b back, q cancel.",
                    shown(&default)
                )?;
            }
        } else if options.is_empty() {
            writeln!(out, "Type your answer; empty to skip, b back, q cancel.")?;
        } else {
            if layout.approve.is_some() && !q.is_multi_select() {
                writeln!(out, "  o) Feedback: type what should change (revise)")?;
            } else {
                writeln!(out, "  o) Other: type your own answer")?;
            }
            let k = options.len();
            if q.is_multi_select() {
                writeln!(
                    out,
                    "Choose any of 1-{k} (e.g. 1,2), add o for your own answer; empty to skip, b back, q cancel."
                )?;
            } else {
                writeln!(
                    out,
                    "Choose one of 1-{k}, or o for your own answer; empty to skip, b back, q cancel."
                )?;
            }
        }
        if let Some(countdown) = &self.countdown {
            writeln!(
                out,
                "⏱ {} left; + for more time.",
                clock((countdown.left)())
            )?;
        }
        write!(out, "> ")?;
        out.flush()
    }

    fn reprompt(&self, out: &mut dyn Write, problem: &str) -> io::Result<LineStep> {
        writeln!(out, "! {problem}")?;
        write!(out, "> ")?;
        out.flush()?;
        Ok(LineStep::NeedLine)
    }

    /// Records the current question's answer and moves on.
    fn record(
        &mut self,
        item: AskUserQuestionAnswerItem,
        out: &mut dyn Write,
    ) -> io::Result<LineStep> {
        self.answers[self.current] = Some(item);
        self.current += 1;
        if self.current == self.questions.len() {
            let answers = self
                .answers
                .iter()
                .zip(self.questions.iter())
                .map(|(a, q)| {
                    a.clone()
                        .unwrap_or_else(|| AskUserQuestionAnswerItem::skipped(q.id.clone()))
                })
                .collect();
            return Ok(LineStep::Done(AskUserQuestionAnswer::new(answers)));
        }
        self.show_question(out)?;
        Ok(LineStep::NeedLine)
    }

    /// Feeds one line (`None`: end of input).
    pub fn feed(&mut self, line: Option<&str>, out: &mut dyn Write) -> io::Result<LineStep> {
        let Some(line) = line else {
            return Ok(LineStep::Cancel);
        };
        let line = line.trim_end_matches(['\r', '\n']);
        let q = self.questions[self.current].clone();
        let id = q.id.clone();
        if let Some(countdown) = &self.countdown
            && line.trim() == "+"
        {
            let step = (countdown.more)();
            writeln!(
                out,
                "-- more time: +{}; {} left",
                clock(step.as_millis().div_ceil(1000) as u64),
                clock((countdown.left)())
            )?;
            write!(out, "> ")?;
            out.flush()?;
            return Ok(LineStep::NeedLine);
        }
        if let Some(revise) = self.awaiting_feedback.take() {
            let item = match custom_text(line) {
                Some(text) => AskUserQuestionAnswerItem::new(id, Vec::new(), Some(text)),
                None => AskUserQuestionAnswerItem::new(id, vec![revise], None),
            };
            return self.record(item, out);
        }
        if let Some(selected) = self.awaiting_text.take() {
            return match custom_text(line) {
                Some(text) => self.record(
                    AskUserQuestionAnswerItem::new(id, selected, Some(text)),
                    out,
                ),
                None => {
                    writeln!(out, "! no text given; choose again")?;
                    self.show_question(out)?;
                    Ok(LineStep::NeedLine)
                }
            };
        }
        let trimmed = line.trim();
        let has_default = q.input.as_ref().is_some_and(|i| i.default.is_some());
        match trimmed {
            "" if !has_default => return self.record(AskUserQuestionAnswerItem::skipped(id), out),
            "q" | "Q" => return Ok(LineStep::Cancel),
            "b" | "B" => {
                if self.current == 0 {
                    return self.reprompt(out, "this is the first question");
                }
                self.current -= 1;
                self.show_question(out)?;
                return Ok(LineStep::NeedLine);
            }
            _ => {}
        }
        if let Some(input) = &q.input {
            let text = if crate::typed::is_empty(input, line) {
                crate::typed::prefill(input)
            } else {
                line.to_owned()
            };
            return match crate::typed::answer(&q, &text) {
                Ok(Some(item)) => self.record(item, out),
                Ok(None) => self.record(AskUserQuestionAnswerItem::skipped(id), out),
                Err(reason) => self.reprompt(out, &render::shown(&reason)),
            };
        }
        let options = q.option_list();
        if options.is_empty() {
            return self.record(
                AskUserQuestionAnswerItem::new(id, Vec::new(), Some(trimmed.to_owned())),
                out,
            );
        }
        let order = self.options_in_order();
        let k = order.len();
        let mut chosen: Vec<usize> = Vec::new();
        let mut other = false;
        for token in trimmed
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
        {
            if token.eq_ignore_ascii_case("o") {
                other = true;
                continue;
            }
            match token.parse::<usize>() {
                Ok(n) if (1..=k).contains(&n) => {
                    let o = order[n - 1];
                    if !chosen.contains(&o) {
                        chosen.push(o);
                    }
                }
                _ => {
                    return self.reprompt(
                        out,
                        &format!("{token:?} is not a choice: use 1-{k}, o, empty, b or q"),
                    );
                }
            }
        }
        let multi = q.is_multi_select();
        if !multi && chosen.len() + usize::from(other) > 1 {
            return self.reprompt(out, &format!("choose one: a number 1-{k}, or o"));
        }
        chosen.sort_unstable();
        let selected: Vec<String> = chosen.iter().map(|&o| options[o].label.clone()).collect();
        if other {
            self.awaiting_text = Some(selected);
            write!(out, "Your answer> ")?;
            out.flush()?;
            return Ok(LineStep::NeedLine);
        }
        if !multi
            && self.layouts[self.current].approve.is_some()
            && selected.len() == 1
            && is_revise(&selected[0])
        {
            self.awaiting_feedback = selected.into_iter().next();
            write!(
                out,
                "What should change? Your feedback (empty: revise without it)> "
            )?;
            out.flush()?;
            return Ok(LineStep::NeedLine);
        }
        self.record(AskUserQuestionAnswerItem::new(id, selected, None), out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use user_questions::{AskUserQuestionIntent, AskUserQuestionOption, validate_answer};

    fn question(id: &str, labels: &[&str], multi: bool) -> AskUserQuestionItem {
        let mut q = AskUserQuestionItem::new(id, format!("{id}?"));
        q.options = Some(
            labels
                .iter()
                .map(|l| AskUserQuestionOption::new(*l, Some(format!("about {l}"))))
                .collect(),
        );
        q.multi_select = multi.then_some(true);
        q
    }

    /// Runs the prompter over `lines`; returns the outcome and everything written.
    fn run(questions: Vec<AskUserQuestionItem>, lines: &[&str]) -> (LineStep, String) {
        let questions: Arc<[AskUserQuestionItem]> = questions.into();
        let mut p = LinePrompter::new(questions.clone());
        let mut out = Vec::new();
        p.start(&mut out).unwrap();
        let mut input = lines.iter();
        loop {
            match p.feed(input.next().copied(), &mut out).unwrap() {
                LineStep::NeedLine => continue,
                LineStep::Done(a) => {
                    validate_answer(&questions, &a).expect("the answer fits");
                    return (LineStep::Done(a), String::from_utf8(out).unwrap());
                }
                LineStep::Cancel => return (LineStep::Cancel, String::from_utf8(out).unwrap()),
            }
        }
    }

    fn answer_json(step: &LineStep) -> String {
        match step {
            LineStep::Done(a) => a.to_compact_json(),
            other => panic!("not answered: {other:?}"),
        }
    }

    #[test]
    fn a_typed_input_takes_a_checked_line_and_a_preview_is_printed() {
        let mut n = AskUserQuestionItem::new("n", "How many?");
        n.input = Some(
            serde_json::from_value(serde_json::json!({"kind": "integer", "maximum": 10})).unwrap(),
        );
        let mut d = AskUserQuestionItem::new("d", "Deploy?");
        d.input = Some(
            serde_json::from_value(serde_json::json!({"kind": "boolean", "default": false}))
                .unwrap(),
        );
        let mut p = question("p", &["Patch"], false);
        p.options.as_mut().unwrap()[0].preview = Some("@@ -1 +1 @@\n-a\n+b\u{1b}".into());
        let (step, out) = run(vec![n, d, p], &["11", "x", "9", "", "1"]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"n","selected":[],"value":9},{"id":"d","selected":[],"value":false},{"id":"p","selected":["Patch"]}]}"#
        );
        assert!(out.contains("  Integer, at most 10\n"), "{out}");
        assert!(
            out.contains("! question n value must be at most 10\n"),
            "{out}"
        );
        assert!(
            out.contains("! question n value must be an integer\n"),
            "{out}"
        );
        assert!(out.contains("empty for the default (n)"), "{out}");
        assert!(out.contains("     | -a\n     | +b\u{241b}\n"), "{out}");
    }

    #[test]
    fn control_characters_in_a_question_are_printed_as_text() {
        let label = "x\u{1b}[31mred\rCR\u{9b}2J";
        let mut q = question("pkg", &[label], false);
        q.header = Some("Hdr\u{1b}]0;pwned\u{7}".into());
        q.question = "Pick\u{1b}[2J one\nsecond line".into();
        q.detail = Some("a\u{8}b\u{7f}".into());
        let (step, out) = run(vec![q], &["1"]);
        // The answer carries the label as given; only what is printed is made visible.
        assert_eq!(
            answer_json(&step),
            format!(
                r#"{{"answers":[{{"id":"pkg","selected":[{}]}}]}}"#,
                serde_json::to_string(label).unwrap()
            )
        );
        assert!(
            !out.chars().any(|c| c.is_control() && c != '\n'),
            "a control character was printed: {out:?}"
        );
        assert!(out.contains("[1/1] Hdr\u{241b}]0;pwned\u{2407}\n"), "{out}");
        assert!(out.contains("Pick\u{241b}[2J one\nsecond line\n"), "{out}");
        assert!(out.contains("  | a\u{2408}b\u{2421}\n"), "{out}");
        assert!(
            out.contains("  1) x\u{241b}[31mred\u{240d}CR\u{fffd}2J - about x"),
            "{out}"
        );
    }

    #[test]
    fn numbers_pick_and_the_prompt_lists_the_options() {
        let (step, out) = run(vec![question("pkg", &["pnpm", "npm"], false)], &["2"]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#
        );
        assert!(out.contains("[1/1] pkg?\n"), "{out}");
        assert!(out.contains("  1) pnpm - about pnpm\n"), "{out}");
        assert!(out.contains("  o) Other: type your own answer\n"), "{out}");
        assert!(out.contains("Choose one of 1-2"), "{out}");
    }

    #[test]
    fn multi_select_with_other() {
        let (step, _) = run(
            vec![question("ci", &["unit", "lint", "e2e"], true)],
            &["3, 1 o", "  fuzzing  "],
        );
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"ci","selected":["unit","e2e"],"custom":"fuzzing"}]}"#
        );
    }

    #[test]
    fn single_select_other_and_errors() {
        let (step, out) = run(
            vec![question("pkg", &["pnpm", "npm"], false)],
            &["7", "1,2", "o", "", "o", "bun"],
        );
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"pkg","selected":[],"custom":"bun"}]}"#
        );
        assert!(out.contains("! \"7\" is not a choice"), "{out}");
        assert!(out.contains("! choose one"), "{out}");
        assert!(out.contains("! no text given"), "{out}");
    }

    #[test]
    fn skip_back_and_cancel() {
        let qs = vec![
            question("a", &["a1", "a2"], false),
            question("b", &["b1"], false),
        ];
        let (step, out) = run(qs.clone(), &["b", "1", "b", "", ""]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"a","selected":[]},{"id":"b","selected":[]}]}"#
        );
        assert!(out.contains("! this is the first question"), "{out}");
        assert_eq!(out.matches("[1/2]").count(), 2, "{out}");
        assert_eq!(run(qs.clone(), &["1", "q"]).0, LineStep::Cancel);
        assert_eq!(run(qs, &["1"]).0, LineStep::Cancel, "end of input cancels");
    }

    #[test]
    fn free_text_question_and_plan_review() {
        let (step, _) = run(vec![AskUserQuestionItem::new("name", "Name?")], &["  Ada "]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"name","selected":[],"custom":"Ada"}]}"#
        );
        let mut plan = question("plan", &["Revise", "Approve"], false);
        plan.header = Some("Plan".into());
        plan.detail = Some("1. do it".into());
        plan.intent = Some(AskUserQuestionIntent::new("plan-review", "Approve"));
        let (step, out) = run(vec![plan], &["1"]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"plan","selected":["Approve"]}]}"#
        );
        assert!(out.contains("[1/1] Plan (plan review)\n"), "{out}");
        assert!(out.contains("  | 1. do it\n"), "{out}");
        assert!(
            out.contains("  1) Approve [approves the plan] - about Approve\n  2) Revise"),
            "{out}"
        );
    }

    fn plan() -> AskUserQuestionItem {
        let mut plan = question("plan", &["Approve", "Revise", "Reject"], false);
        plan.detail = Some("1. do it".into());
        plan.intent = Some(AskUserQuestionIntent::new("plan-review", "Approve"));
        plan
    }

    #[test]
    fn revise_in_a_plan_review_asks_for_feedback() {
        let (step, out) = run(vec![plan()], &["2", " fewer steps "]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"plan","selected":[],"custom":"fewer steps"}]}"#
        );
        assert!(
            out.ends_with("What should change? Your feedback (empty: revise without it)> "),
            "{out}"
        );
        let (step, _) = run(vec![plan()], &["2", ""]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"plan","selected":["Revise"]}]}"#
        );
        assert!(
            out.contains("  o) Feedback: type what should change (revise)\n"),
            "{out}"
        );
        let (step, _) = run(vec![plan()], &["3"]);
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"plan","selected":["Reject"]}]}"#
        );
    }

    #[test]
    fn plus_asks_for_more_time_when_there_is_a_deadline() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let left = Arc::new(AtomicU64::new(90));
        let (l, m) = (left.clone(), left.clone());
        let countdown = Countdown {
            left: Box::new(move || l.load(Ordering::SeqCst)),
            more: Box::new(move || {
                m.fetch_add(60, Ordering::SeqCst);
                Duration::from_secs(60)
            }),
        };
        let questions: Arc<[AskUserQuestionItem]> =
            vec![question("pkg", &["pnpm", "npm"], false)].into();
        let mut p = LinePrompter::new(questions).with_countdown(Some(countdown));
        let mut out = Vec::new();
        p.start(&mut out).unwrap();
        assert_eq!(p.feed(Some("+"), &mut out).unwrap(), LineStep::NeedLine);
        assert_eq!(left.load(Ordering::SeqCst), 150);
        let step = p.feed(Some("2"), &mut out).unwrap();
        assert_eq!(
            answer_json(&step),
            r#"{"answers":[{"id":"pkg","selected":["npm"]}]}"#
        );
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("⏱ 1:30 left; + for more time.\n> "), "{out}");
        assert!(out.contains("-- more time: +1:00; 2:30 left\n> "), "{out}");
        // Without a deadline `+` is no choice.
        let (_, out) = run(vec![question("pkg", &["pnpm"], false)], &["+", "1"]);
        assert!(out.contains("! \"+\" is not a choice"), "{out}");
        assert!(!out.contains("more time"), "{out}");
    }
}
