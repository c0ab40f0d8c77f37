// The question page: one small ES module, no framework. Every text from a question is put on
// the page as text (textContent, text nodes, .value), never parsed as HTML.

const RECOMMENDED = ' (Recommended)';
const PLAN_REVIEW = 'plan-review';
/** What "More time" adds to the time left (the terminal's step, at most five minutes). */
const MORE_TIME_MS = 5 * 60 * 1000;
/** The largest `ms` an extend takes (§16). */
const MAX_EXTEND_MS = 2147483647;
const MAX_NOTICES = 5;

/** ticket → batch record: { p, section, form, countdown, busy, resolvedOutcome, resolvedBy } */
const batches = new Map();
/** Server clock minus this clock, in ms (deadlines are the server's). */
let skew = 0;
let source = null;
/** The highest ticket shown so far. */
let lastTicket = 0;
const UNAUTHORIZED = 'unauthorized';

const $ = (id) => document.getElementById(id);

/** Creates an element; `text` sets textContent, `on*` adds listeners, the rest are attributes. */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function splitRecommended(label) {
  if (label.endsWith(RECOMMENDED) && label.slice(0, -RECOMMENDED.length).trim() !== '') {
    return [label.slice(0, -RECOMMENDED.length), true];
  }
  return [label, false];
}

function isPlanReview(q) {
  return !!(q.intent && q.intent.kind === PLAN_REVIEW && (q.options || []).some((o) => o.label === q.intent.approve));
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

function shortText(p) {
  const q = p.questions[0] || {};
  const text = q.header ? `${q.header}: ${q.question}` : q.question || `question ${p.ticket}`;
  if (text.length <= 80) return text;
  // Cut between characters as the person sees them: never inside a surrogate pair or an emoji
  // sequence (whole graphemes, up to 79 UTF-16 units).
  let end = 0;
  for (const { index, segment } of graphemes.segment(text)) {
    if (index + segment.length > 79) break;
    end = index + segment.length;
  }
  return `${text.slice(0, end)}…`;
}

// ---- notices, title, status -------------------------------------------------------------------

/**
 * A notice: `text` is a string, or the parts `about` makes (the question's own words kept apart
 * from the page's, so a direction override in them cannot turn the notice's text around).
 * Returns its element.
 */
function notice(text, kind = 'info') {
  const list = $('notices');
  const time = new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const item = el('p', { class: `notice ${kind}`, tabindex: -1 }, el('span', { class: 'when', text: time }), ' ', ...[text].flat());
  list.prepend(item);
  while (list.children.length > MAX_NOTICES) list.lastElementChild.remove();
  return item;
}

/** What a notice says of batch `p`: `prefix`, then the batch's short text isolated. */
function about(prefix, p) {
  return [prefix, el('bdi', { text: shortText(p) })];
}

function setStatus(text, kind = '') {
  const status = $('status');
  status.textContent = text;
  status.className = `status ${kind}`;
}

function refreshCount() {
  const n = batches.size + queued.size;
  document.title = n > 0 ? `(${n}) user-questions` : 'user-questions';
  $('empty').hidden = n > 0;
  $('title').textContent = n === 0 ? 'Questions for you' : n === 1 ? '1 question batch waiting' : `${n} question batches waiting`;
}

// ---- countdowns -------------------------------------------------------------------------------

function formatLeft(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${sec}` : `${m}:${sec}`;
}

function showCountdown(b, now) {
  if (!b.p.expiresAt || !b.countdown) return;
  const left = Date.parse(b.p.expiresAt) - now;
  b.countdown.textContent = left > 0 ? `Expires in ${formatLeft(left)}` : 'Expiring…';
  b.countdown.classList.toggle('urgent', left < 60000);
  b.countdown.setAttribute('datetime', b.p.expiresAt);
}

function tick() {
  const now = Date.now() + skew;
  for (const b of batches.values()) showCountdown(b, now);
}

// ---- rendering --------------------------------------------------------------------------------

function renderQuestion(p, q, qi) {
  const base = `t${p.ticket}-q${qi}`;
  const multi = q.multiSelect === true;
  const type = multi ? 'checkbox' : 'radio';
  const name = `${base}-choice`;
  const options = q.options || [];
  const plan = isPlanReview(q);
  const legend = el('legend', { id: `${base}-legend` });
  if (q.header) legend.append(el('span', { class: 'tag', text: q.header }), ' ');
  legend.append(el('span', { class: 'question-text', text: q.question }));
  const fieldset = el('fieldset', { class: 'question', 'data-qi': qi }, legend);

  if (q.detail !== undefined) {
    if (plan) {
      fieldset.append(
        el('pre', { class: 'plan', tabindex: 0, role: 'region', 'aria-label': 'The plan under review', text: q.detail }),
      );
    } else {
      fieldset.append(el('p', { class: 'detail', text: q.detail }));
    }
  }

  // A radio group only where there are radios (a question without options has a text box).
  const role = !multi && options.length > 0 ? 'radiogroup' : 'group';
  const list = el('div', { class: 'options', role, 'aria-labelledby': `${base}-legend` });
  // A plan review shows its approve option first, as the terminal does.
  const order = options.map((_, i) => i);
  if (plan) {
    const a = options.findIndex((o) => o.label === q.intent.approve);
    order.splice(order.indexOf(a), 1);
    order.unshift(a);
  }
  for (const i of order) {
    const option = options[i];
    const [text, recommended] = splitRecommended(option.label);
    const approve = plan && option.label === q.intent.approve;
    const id = `${base}-o${i}`;
    const described = option.description !== undefined ? `${id}-d` : undefined;
    const input = el('input', { type, name, id, 'data-label-index': i, 'aria-describedby': described });
    const label = el('label', { for: id, class: 'option-label' }, el('span', { class: 'label', text }));
    if (recommended) label.append(' ', el('span', { class: 'badge recommended', text: 'Recommended' }));
    if (approve) label.append(' ', el('span', { class: 'badge approve', text: 'Approves the plan' }));
    const body = el('div', { class: 'option-body' }, label);
    if (described) body.append(el('span', { class: 'description', id: described, text: option.description }));
    list.append(el('div', { class: `option${approve ? ' approve-option' : ''}` }, input, body));
  }

  const otherId = `${base}-other`;
  const textId = `${base}-text`;
  if (options.length > 0) {
    const otherInput = el('input', { type, name, id: otherId, 'data-other': '' });
    const otherText = el('input', {
      type: 'text',
      id: textId,
      class: 'other-text',
      autocomplete: 'off',
      'aria-label': plan ? `Feedback or another answer for: ${q.question}` : `Other answer for: ${q.question}`,
      placeholder: plan ? 'Type feedback or another answer' : 'Type another answer',
    });
    // Typing there chooses Other.
    otherText.addEventListener('input', () => {
      if (otherText.value.trim() !== '') otherInput.checked = true;
    });
    list.append(
      el(
        'div',
        { class: 'option other' },
        otherInput,
        el('div', { class: 'option-body' }, el('label', { for: otherId, class: 'option-label' }, el('span', { class: 'label', text: 'Other' }))),
        otherText,
      ),
    );
    // Skip, as the terminal has it: a radio in the group, or for multi-select a checkbox that
    // clears and disables the question's other choices while it is checked.
    const skipId = `${base}-skip`;
    const skipInput = el('input', { type, name, id: skipId, 'data-skip': '', 'aria-describedby': `${skipId}-d` });
    if (multi) skipInput.addEventListener('change', () => applySkip(fieldset));
    list.append(
      el(
        'div',
        { class: 'option skip' },
        skipInput,
        el(
          'div',
          { class: 'option-body' },
          el('label', { for: skipId, class: 'option-label' }, el('span', { class: 'label', text: 'Skip' })),
          el('span', { class: 'description', id: `${skipId}-d`, text: 'Leave this question unanswered.' }),
        ),
      ),
    );
    if (multi) fieldset.append(el('p', { class: 'hint', text: 'Choose any number, or Skip.' }));
  } else {
    list.append(
      el('label', { for: textId, class: 'free-label', text: 'Your answer (leave empty to skip)' }),
      el('textarea', { id: textId, class: 'other-text free', rows: 3, autocomplete: 'off' }),
    );
  }
  fieldset.append(list);
  return fieldset;
}

/**
 * A multi-select question's Skip: while it is checked, the question's other checkboxes and its
 * Other text are cleared and disabled; unchecked, they are enabled again.
 */
function applySkip(fieldset) {
  const skip = fieldset.querySelector('input[type=checkbox][data-skip]');
  if (!skip) return;
  for (const control of fieldset.querySelectorAll('input[type=checkbox]:not([data-skip]), .other-text')) {
    if (skip.checked) {
      if (control.type === 'checkbox') control.checked = false;
      else control.value = '';
    }
    control.disabled = skip.checked;
  }
  fieldset.classList.toggle('skipped', skip.checked);
}

function render(p) {
  const titleId = `t${p.ticket}-title`;
  const heading = el('h2', { id: titleId, tabindex: -1 });
  heading.append(el('span', { class: 'ticket', text: `#${p.ticket}` }), ' ');
  const first = p.questions[0] || {};
  heading.append(el('span', { text: p.questions.length > 1 ? `${p.questions.length} questions` : first.header || 'Question' }));
  const meta = el('p', { class: 'meta' });
  if (p.agentId !== undefined) meta.append(el('span', {}, 'Asked by ', el('bdi', { text: p.agentId })));
  if (p.askedAt) {
    const at = new Date(p.askedAt);
    if (!Number.isNaN(at.getTime())) {
      if (meta.childNodes.length) meta.append(' · ');
      meta.append(el('time', { datetime: p.askedAt, text: at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) }));
    }
  }
  const head = el('div', { class: 'batch-head' }, el('div', {}, heading, meta));
  const countdown = el('time', { class: 'countdown' });
  const more = el('button', { type: 'button', class: 'more-time', text: 'More time', 'aria-label': `More time for question ${p.ticket} (5 more minutes)` });
  const deadline = el('div', { class: 'deadline' }, countdown, more);
  deadline.hidden = !p.expiresAt;
  head.append(deadline);

  const form = el('form', { novalidate: true, 'aria-labelledby': titleId });
  p.questions.forEach((q, qi) => form.append(renderQuestion(p, q, qi)));
  const error = el('p', { class: 'error', role: 'alert' });
  const submit = el('button', { type: 'submit', class: 'primary', text: p.questions.length > 1 ? 'Submit answers' : 'Submit answer' });
  const dismiss = el('button', { type: 'button', class: 'secondary', text: 'Dismiss', 'aria-label': `Dismiss question ${p.ticket} without answering` });
  form.append(error, el('div', { class: 'actions' }, submit, dismiss));

  const section = el('section', { class: 'batch', 'aria-labelledby': titleId, 'data-ticket': p.ticket }, head, form);
  const b = { p, section, form, error, heading, countdown, deadline, busy: false, extending: false, hadFocus: false, resolvedOutcome: null, resolvedBy: null };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    submitBatch(b);
  });
  dismiss.addEventListener('click', () => dismissBatch(b));
  more.addEventListener('click', () => moreTime(b));
  return b;
}

// ---- answers ----------------------------------------------------------------------------------

/** Reads the form into an answer, or returns { error, focus } for what still needs a choice. */
function collect(b) {
  const answers = [];
  const fieldsets = b.form.querySelectorAll('fieldset.question');
  for (const [qi, q] of b.p.questions.entries()) {
    const fs = fieldsets[qi];
    const options = q.options || [];
    const text = fs.querySelector('.other-text');
    const typed = text ? text.value.trim() : '';
    const item = { id: q.id, selected: [] };
    if (options.length === 0) {
      if (typed !== '') item.custom = typed;
      answers.push(item);
      continue;
    }
    const inputs = [...fs.querySelectorAll('input[type=radio], input[type=checkbox]')];
    const chosen = inputs.filter((i) => i.checked);
    if (chosen.some((i) => i.hasAttribute('data-skip'))) {
      answers.push(item);
      continue;
    }
    const other = chosen.some((i) => i.hasAttribute('data-other'));
    if (other && typed === '') return { error: `Type your answer for “${q.question}”, or choose another option.`, focus: text };
    if (q.multiSelect === true) {
      for (const i of chosen) if (i.dataset.labelIndex !== undefined) item.selected.push(options[Number(i.dataset.labelIndex)].label);
      if (other) item.custom = typed;
    } else {
      if (chosen.length === 0) return { error: `Choose an answer for “${q.question}” (or Skip).`, focus: inputs[0] };
      const c = chosen[0];
      if (c.hasAttribute('data-other')) item.custom = typed;
      else if (c.dataset.labelIndex !== undefined) item.selected.push(options[Number(c.dataset.labelIndex)].label);
    }
    answers.push(item);
  }
  return { answer: { answers } };
}

function setBusy(b, busy) {
  b.busy = busy;
  for (const control of b.form.querySelectorAll('input, textarea, button')) control.disabled = busy;
  // A question skipped keeps its other choices disabled.
  if (!busy) for (const fieldset of b.form.querySelectorAll('fieldset.question')) applySkip(fieldset);
  b.section.setAttribute('aria-busy', busy ? 'true' : 'false');
}

async function post(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    credentials: 'same-origin',
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  return { status: response.status, data };
}

function errorText(result) {
  return (result.data && result.data.error && result.data.error.message) || `The server answered ${result.status}.`;
}

async function settleBatch(b, path, body, done) {
  // Disabling the focused button drops the focus: remember where it was.
  b.hadFocus = b.section.contains(document.activeElement);
  setBusy(b, true);
  b.error.textContent = '';
  let result;
  try {
    result = await post(path, body);
  } catch {
    setBusy(b, false);
    if (b.resolvedOutcome) removeBatch(b.p.ticket, outcomeNotice(b.p, b.resolvedOutcome, b.resolvedBy), 'warn');
    else b.error.textContent = 'Could not reach the server. Check the connection and try again.';
    return;
  }
  if (result.status === 200) {
    removeBatch(b.p.ticket, done, 'ok');
  } else if (result.status === 409 || result.status === 404 || b.resolvedOutcome) {
    // Not taken: settled elsewhere (or, refused for another reason, settled meanwhile). The
    // notice says so and takes the focus, so the person sees that what they sent was not used.
    const why = b.resolvedOutcome
      ? outcomeNotice(b.p, b.resolvedOutcome, b.resolvedBy)
      : about('Not sent — this question was already answered, dismissed or closed elsewhere: ', b.p);
    const item = removeBatch(b.p.ticket, why, 'warn');
    if (item) item.focus();
  } else {
    setBusy(b, false);
    b.error.textContent = errorText(result);
  }
}

function submitBatch(b) {
  if (b.busy) return;
  const { answer, error, focus } = collect(b);
  if (error) {
    b.error.textContent = error;
    if (focus) focus.focus();
    return;
  }
  settleBatch(b, `/api/v1/questions/${b.p.ticket}/answer`, answer, about('Answer sent: ', b.p));
}

function dismissBatch(b) {
  if (b.busy) return;
  settleBatch(b, `/api/v1/questions/${b.p.ticket}/cancel`, {}, about('Dismissed: ', b.p));
}

/**
 * "More time": the server keeps max(deadline, now + ms) (§16), so asking for five minutes with
 * more than five left would change nothing. It asks for what is left plus five minutes, as the
 * terminal does, and its notice says how far the deadline actually moved — or that it did not.
 */
async function moreTime(b) {
  if (b.extending) return;
  b.extending = true;
  const before = Date.parse(b.p.expiresAt);
  const left = Number.isNaN(before) ? 0 : Math.max(0, before - (Date.now() + skew));
  const ms = Math.min(MAX_EXTEND_MS, Math.ceil(left) + MORE_TIME_MS);
  try {
    const result = await post(`/api/v1/questions/${b.p.ticket}/extend`, { ms });
    // Settled while the request was out (the stream said so): nothing more to say of it.
    if (batches.get(b.p.ticket) !== b) return;
    if (result.status === 409 || result.status === 404) {
      // Settled elsewhere and the stream missed it: it cannot be answered here any more.
      const why = about('No more time — this question was already answered, dismissed or closed elsewhere: ', b.p);
      const item = removeBatch(b.p.ticket, why, 'warn');
      if (item) item.focus();
    } else if (result.status === 200 && result.data && result.data.expiresAt) {
      b.p.expiresAt = result.data.expiresAt;
      showCountdown(b, Date.now() + skew);
      const moved = Number.isNaN(before) ? Infinity : Date.parse(result.data.expiresAt) - before;
      if (moved >= 1000) {
        const by = Number.isFinite(moved) ? ` (+${formatLeft(Math.round(moved / 1000) * 1000)})` : '';
        notice(about(`More time${by} for: `, b.p));
      } else {
        notice(about('The deadline did not move for: ', b.p), 'warn');
      }
    } else if (result.status !== 200) {
      b.error.textContent = errorText(result);
    }
  } catch {
    b.error.textContent = 'Could not reach the server. Check the connection and try again.';
  } finally {
    b.extending = false;
  }
}

// ---- the list ---------------------------------------------------------------------------------

/** The name of who settled, from an event's `by` (§23): a non-empty string, else null. */
function nameOf(by) {
  if (!by || typeof by !== 'object') return null;
  const name = typeof by.name === 'string' && by.name !== '' ? by.name : by.id;
  return typeof name === 'string' && name !== '' ? name : null;
}

/**
 * What a notice says of batch `p` that left with `outcome`; `by` (the event's, §23), when it
 * names a person who answered or cancelled, is named — isolated, as the question's words are.
 */
function outcomeNotice(p, outcome, by = null) {
  const name = nameOf(by);
  if (name !== null && (outcome === 'answered' || outcome === 'cancelled')) {
    const verb = outcome === 'answered' ? 'Answered by ' : 'Cancelled by ';
    return [verb, el('bdi', { class: 'by', text: name }), ...about(': ', p)];
  }
  switch (outcome) {
    case 'answered':
      return about('Answered elsewhere: ', p);
    case 'cancelled':
      return about('Dismissed elsewhere: ', p);
    case 'aborted':
      return about('Withdrawn by the asker: ', p);
    case 'timed_out':
      return about('Expired without an answer: ', p);
    case 'failed':
      return about("Closed by the asker's host: ", p);
    default:
      return about('No longer waiting: ', p);
  }
}

/**
 * Whether `p` is another question than `shown` under the same ticket: a server started again at
 * the same address (and token) numbers its tickets from 1 again.
 */
function otherAsk(shown, p) {
  return shown.askedAt !== p.askedAt;
}

function addBatch(p) {
  const shown = queued.get(p.ticket) || (batches.get(p.ticket) || {}).p;
  if (shown && otherAsk(shown, p) && !(batches.get(p.ticket) || {}).busy) {
    removeBatch(p.ticket, about('No longer waiting: ', shown), 'warn');
  }
  const waiting = queued.get(p.ticket);
  if (waiting) {
    waiting.expiresAt = p.expiresAt;
    return;
  }
  if (queue.length > 0 && p.ticket > lastTicket) {
    enqueue([p]);
    return;
  }
  const existing = batches.get(p.ticket);
  if (existing) {
    existing.p.expiresAt = p.expiresAt;
    existing.deadline.hidden = !p.expiresAt;
    showCountdown(existing, Date.now() + skew);
    return;
  }
  const b = render(p);
  // Keep arrival order (tickets increase): new questions go last, a replayed older one in place.
  const after = p.ticket > lastTicket ? undefined : [...batches.keys()].filter((t) => t > p.ticket).sort((x, y) => x - y)[0];
  batches.set(p.ticket, b);
  lastTicket = Math.max(lastTicket, p.ticket);
  if (after !== undefined) $('batches').insertBefore(b.section, batches.get(after).section);
  else $('batches').append(b.section);
  // Said to a screen reader (the page's title and list change silently).
  $('announce').textContent = `New question: ${shortText(p)}`;
  refreshCount();
  showCountdown(b, Date.now() + skew);
}

/**
 * Questions known but not drawn yet: a long list is drawn in slices, the first at once, so the
 * page shows its first screen (and the count in the title) without waiting for the rest.
 */
const queue = [];
const queued = new Map();
const FIRST_SLICE = 20;
const SLICE = 50;

function enqueue(list) {
  const idle = queue.length === 0;
  for (const p of list) {
    queue.push(p);
    queued.set(p.ticket, p);
    lastTicket = Math.max(lastTicket, p.ticket);
  }
  refreshCount();
  if (idle && queue.length > 0) drawSlice(FIRST_SLICE);
}

function drawSlice(size) {
  const fragment = document.createDocumentFragment();
  const now = Date.now() + skew;
  for (const p of queue.splice(0, size)) {
    queued.delete(p.ticket);
    const b = render(p);
    batches.set(p.ticket, b);
    fragment.append(b.section);
    showCountdown(b, now);
  }
  $('batches').append(fragment);
  if (queue.length > 0) setTimeout(() => drawSlice(SLICE), 0);
}

/** Takes batch `ticket` off the page, with a notice when `text` is given; returns the notice. */
function removeBatch(ticket, text, kind) {
  const waiting = queued.get(ticket);
  if (waiting) {
    queued.delete(ticket);
    queue.splice(queue.indexOf(waiting), 1);
    const item = text ? notice(text, kind) : undefined;
    refreshCount();
    return item;
  }
  const b = batches.get(ticket);
  if (!b) return undefined;
  const hadFocus = b.section.contains(document.activeElement) || (b.hadFocus && document.activeElement === document.body);
  const next = b.section.nextElementSibling || b.section.previousElementSibling;
  b.section.remove();
  batches.delete(ticket);
  const item = text ? notice(text, kind) : undefined;
  refreshCount();
  if (hadFocus) {
    const heading = next && next.querySelector('h2');
    (heading || $('title')).focus();
  }
  return item;
}

function onResolved(ticket, outcome, by) {
  const waiting = queued.get(ticket);
  if (waiting) {
    removeBatch(ticket, outcomeNotice(waiting, outcome, by), 'warn');
    return;
  }
  const b = batches.get(ticket);
  if (!b) return;
  // Our own submission in flight: its response says whether we or another screen won.
  if (b.busy) {
    b.resolvedOutcome = outcome;
    b.resolvedBy = by || null;
    return;
  }
  removeBatch(ticket, outcomeNotice(b.p, outcome, by), outcome === 'answered' ? 'info' : 'warn');
}

function onExtended(ticket, expiresAt) {
  const waiting = queued.get(ticket);
  if (waiting) waiting.expiresAt = expiresAt;
  const b = batches.get(ticket);
  if (!b) return;
  b.p.expiresAt = expiresAt;
  b.deadline.hidden = false;
  showCountdown(b, Date.now() + skew);
}

/**
 * Once a stream is open, drops what the server no longer has pending (resolved while no stream
 * was open). It only removes: the stream itself adds, so a late list never brings back a
 * question whose removal the stream already delivered.
 */
async function reconcile() {
  // Only what was shown before the list was asked for: a question the stream brings while the
  // list is on its way is newer than the list and stays.
  const known = new Set([...batches.keys(), ...queued.keys()]);
  const result = await fetchPending();
  if (!Array.isArray(result)) return;
  const live = new Set(result.map((p) => p.ticket));
  for (const [ticket, b] of [...batches]) {
    if (known.has(ticket) && !live.has(ticket) && !b.busy) removeBatch(ticket, about('No longer waiting: ', b.p), 'warn');
  }
  for (const [ticket, p] of [...queued]) {
    if (known.has(ticket) && !live.has(ticket)) removeBatch(ticket, about('No longer waiting: ', p), 'warn');
  }
}

async function fetchPending() {
  try {
    const before = Date.now();
    const response = await fetch('/api/v1/questions', { credentials: 'same-origin' });
    if (response.status === 401) {
      setStatus('This page needs its link: open the URL with ?token=… that the program printed.', 'bad');
      return UNAUTHORIZED;
    }
    if (!response.ok) return null;
    const date = Date.parse(response.headers.get('Date') || '');
    if (!Number.isNaN(date)) {
      const mid = (before + Date.now()) / 2;
      const offset = date + 500 - mid;
      // Date has whole seconds: correct only a clearly skewed clock.
      skew = Math.abs(offset) > 2000 ? offset : 0;
    }
    const body = await response.json();
    return body.pending;
  } catch {
    return null;
  }
}

// ---- who is signed in -------------------------------------------------------------------------

/**
 * "Signed in as NAME" in the header, for a person of an access file (§23): `/api/v1/me` gives
 * `{"id","name"}` for them, `{}` for the one token (nothing is shown then).
 */
async function showMe() {
  let me;
  try {
    const response = await fetch('/api/v1/me', { credentials: 'same-origin' });
    if (!response.ok) return;
    me = await response.json();
  } catch {
    return;
  }
  if (!me || typeof me.id !== 'string' || me.id === '') return;
  const name = typeof me.name === 'string' && me.name !== '' ? me.name : me.id;
  const line = $('me');
  line.replaceChildren('Signed in as ', el('bdi', { class: 'who', text: name }));
  line.hidden = false;
}

// ---- the event stream -------------------------------------------------------------------------

/** When the stream was last lost (null while it is open). */
let lostSince = null;
/** After this long without the server, the status says it may be gone for good. */
const LONG_LOST_MS = 15000;

const LONG_LOST_TEXT =
  'Cannot reach the server (the program that asked, or the hub): it may have stopped. This page reconnects when it is back.';

function lostText() {
  if (lostSince !== null && Date.now() - lostSince >= LONG_LOST_MS) return LONG_LOST_TEXT;
  return 'Connection lost. Reconnecting…';
}

function connect() {
  source = new EventSource('/api/v1/events');
  source.addEventListener('open', () => {
    lostSince = null;
    setStatus('Live: new questions appear by themselves.', 'ok');
    reconcile();
  });
  source.addEventListener('requested', (e) => addBatch(JSON.parse(e.data)));
  source.addEventListener('resolved', (e) => {
    const { ticket, outcome, by } = JSON.parse(e.data);
    onResolved(ticket, outcome, by);
  });
  source.addEventListener('extended', (e) => {
    const { ticket, expiresAt } = JSON.parse(e.data);
    onExtended(ticket, expiresAt);
  });
  source.addEventListener('error', () => {
    lostSince ??= Date.now();
    if (source.readyState !== EventSource.CLOSED) {
      setStatus(lostText(), 'bad');
      return;
    }
    // The browser gave up on this stream (the server refused, or a proxy answered for it while
    // it is gone): find out why, and try again. Gone a while, the status says so, as above.
    setStatus(lostText() === LONG_LOST_TEXT ? LONG_LOST_TEXT : 'Disconnected. Retrying…', 'bad');
    fetchPending().then((pending) => {
      if (pending === UNAUTHORIZED) return;
      setTimeout(() => {
        if (source.readyState === EventSource.CLOSED) connect();
      }, 3000);
    });
  });
}

refreshCount();
setInterval(tick, 1000);
showMe();
// The list first, drawn at once (one insertion, however many are waiting); then the stream,
// which replays what is pending (already shown) and brings every change after.
fetchPending().then((pending) => {
  if (pending === UNAUTHORIZED) return;
  if (Array.isArray(pending)) {
    enqueue(pending);
  }
  connect();
});
