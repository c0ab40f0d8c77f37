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
  // Until the whole list is read, the count is the server's (the first page's `total`).
  const n = listRead ? waiting.size : Math.max(waiting.size, totalHint);
  const title = n > 0 ? `(${n}) user-questions` : 'user-questions';
  if (document.title !== title) document.title = title;
  $('empty').hidden = n > 0;
  const heading = n === 0 ? 'Questions for you' : n === 1 ? '1 question batch waiting' : `${number.format(n)} question batches waiting`;
  if ($('title').textContent !== heading) $('title').textContent = heading;
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

// ---- typed inputs and previews (§24) -----------------------------------------------------------

/** The `<input type>` of each input kind (boolean has Yes/No radios; multiline text a textarea). */
const INPUT_TYPES = {
  text: 'text',
  number: 'number',
  integer: 'number',
  date: 'date',
  datetime: 'datetime-local',
  email: 'email',
  url: 'url',
  secret: 'password',
  file: 'file',
};
/** A file's size limit when the input gives no `maxBytes` (the core's DEFAULT_MAX_BYTES). */
const DEFAULT_MAX_BYTES = 1048576;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function hasInput(q) {
  return !!(q.input && typeof q.input === 'object' && (Object.hasOwn(INPUT_TYPES, q.input.kind) || q.input.kind === 'boolean'));
}

function formatBytes(n) {
  if (n >= 1048576 && n % 1048576 === 0) return `${n / 1048576} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** A local `YYYY-MM-DDTHH:MM[:SS]` for `datetime-local` from an RFC 3339 date-time, or ''. */
function toLocalInput(rfc3339) {
  const d = new Date(rfc3339);
  if (typeof rfc3339 !== 'string' || Number.isNaN(d.getTime())) return '';
  const two = (x) => String(x).padStart(2, '0');
  const date = `${String(d.getFullYear()).padStart(4, '0')}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  const seconds = d.getSeconds() !== 0 ? `:${two(d.getSeconds())}` : '';
  return `${date}T${two(d.getHours())}:${two(d.getMinutes())}${seconds}`;
}

/** RFC 3339 with this browser's offset from a `datetime-local` value: `2026-12-07T10:00:00+01:00`. */
function toRfc3339(local) {
  const d = new Date(local);
  if (Number.isNaN(d.getTime())) return null;
  const full = local.length === 16 ? `${local}:00` : local;
  const offset = -d.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${full}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** What the field asks for, in words (its bounds as the request gave them). */
function inputHint(input) {
  const { kind, minimum: min, maximum: max, minLength, maxLength } = input;
  const range = (from, to, lo, hi) => (from !== undefined && to !== undefined ? `, ${lo} ${from} and ${hi} ${to}` : from !== undefined ? `, ${lo} ${from}` : to !== undefined ? `, ${hi} ${to}` : '');
  switch (kind) {
    case 'text':
    case 'secret': {
      const what = kind === 'secret' ? 'Hidden as you type' : 'Text';
      const len = minLength !== undefined && maxLength !== undefined ? `, ${minLength} to ${maxLength} characters` : minLength !== undefined ? `, at least ${minLength} characters` : maxLength !== undefined ? `, at most ${maxLength} characters` : '';
      return `${what}${len}.`;
    }
    case 'number':
      return `A number${range(min, max, 'at least', 'at most')}.`;
    case 'integer':
      return `A whole number${range(min, max, 'at least', 'at most')}.`;
    case 'boolean':
      return 'Yes or no.';
    case 'date':
      return `A date${range(min, max, 'on or after', 'on or before')}.`;
    case 'datetime':
      return `A date and time in your time zone${range(min, max, 'at or after', 'at or before')}.`;
    case 'email':
      return 'An email address.';
    case 'url':
      return 'A web address (http or https).';
    case 'file': {
      const types = Array.isArray(input.accept) ? ` (${input.accept.join(', ')})` : '';
      return `A file${types} of at most ${formatBytes(input.maxBytes ?? DEFAULT_MAX_BYTES)}.`;
    }
    default:
      return '';
  }
}

/** The control of a question with `input`: a labelled field, its hint, and its error line. */
function renderInput(fieldset, q, base) {
  const input = q.input;
  const kind = input.kind;
  const id = `${base}-value`;
  const hintId = `${base}-hint`;
  const errorId = `${base}-error`;
  const described = `${hintId} ${errorId}`;
  const box = el('div', { class: `options input-field kind-${kind}`, role: kind === 'boolean' ? 'radiogroup' : 'group', 'aria-labelledby': `${base}-legend` });
  const hint = el('p', { class: 'hint', id: hintId, text: inputHint(input) });
  const error = el('p', { class: 'field-error', id: errorId });
  if (kind === 'boolean') {
    const name = `${base}-choice`;
    for (const [text, value] of [['Yes', 'true'], ['No', 'false'], ['Skip', '']]) {
      const oid = `${base}-${value || 'skip'}`;
      const radio = el('input', { type: 'radio', name, id: oid, 'data-value': value, 'aria-describedby': described });
      if (input.default === (value === 'true') && value !== '') radio.checked = true;
      const label = el('label', { for: oid, class: 'option-label' }, el('span', { class: 'label', text }));
      box.append(el('div', { class: `option${value === '' ? ' skip' : ''}` }, radio, el('div', { class: 'option-body' }, label)));
    }
    box.addEventListener('change', () => clearFieldError(fieldset));
    fieldset.append(box, hint, error);
    return;
  }
  const props = { id, class: 'value-input', 'aria-describedby': described, 'data-kind': kind };
  let control;
  if (kind === 'text' && input.multiline === true) {
    control = el('textarea', { ...props, rows: 4 });
  } else {
    control = el('input', { ...props, type: INPUT_TYPES[kind] });
  }
  if (kind !== 'file') control.setAttribute('autocomplete', 'off');
  if (kind === 'integer') control.setAttribute('step', '1');
  if (kind === 'number') control.setAttribute('step', 'any');
  if (kind === 'integer' || kind === 'number' || kind === 'date') {
    if (input.minimum !== undefined) control.setAttribute('min', String(input.minimum));
    if (input.maximum !== undefined) control.setAttribute('max', String(input.maximum));
  }
  if (kind === 'datetime') {
    const lo = toLocalInput(input.minimum);
    const hi = toLocalInput(input.maximum);
    if (lo) control.setAttribute('min', lo);
    if (hi) control.setAttribute('max', hi);
    control.setAttribute('step', '1');
  }
  if (kind === 'integer' || kind === 'number') control.setAttribute('inputmode', kind === 'integer' ? 'numeric' : 'decimal');
  if (kind === 'file' && Array.isArray(input.accept)) control.setAttribute('accept', input.accept.join(','));
  if (input.default !== undefined && input.default !== null && kind !== 'file' && kind !== 'secret') {
    control.value = kind === 'datetime' ? toLocalInput(input.default) : String(input.default);
  }
  control.addEventListener('input', () => clearFieldError(fieldset));
  control.addEventListener('change', () => clearFieldError(fieldset));
  const labelText = kind === 'file' ? 'Choose a file (or none to skip)' : 'Your answer (leave empty to skip)';
  box.append(el('label', { for: id, class: 'free-label', text: labelText }), control);
  fieldset.append(box, hint, error);
}

function fieldErrorOf(fieldset) {
  return fieldset.querySelector('.field-error');
}

/** Shows `message` next to the field of a question with `input`; returns its control. */
function showFieldError(fieldset, message) {
  const error = fieldErrorOf(fieldset);
  if (error) error.textContent = message;
  const controls = [...fieldset.querySelectorAll('.value-input, .input-field input[type=radio]')];
  for (const c of controls) c.setAttribute('aria-invalid', 'true');
  fieldset.classList.add('invalid');
  return controls.find((c) => c.checked) || controls[0];
}

function clearFieldError(fieldset) {
  const error = fieldErrorOf(fieldset);
  if (!error || error.textContent === '') return;
  error.textContent = '';
  for (const c of fieldset.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
  fieldset.classList.remove('invalid');
}

/** Whether `accept` (media ranges) admits `mediaType`, as the core compares them. */
function accepts(accept, mediaType) {
  const bare = (t) => t.split(';')[0].trim().toLowerCase();
  const [type, sub] = bare(mediaType).split('/');
  return accept.some((range) => {
    const [rt, rs] = bare(range).split('/');
    return (rt === '*' && rs === '*') || (rt === type && (rs === '*' || rs === sub));
  });
}

function isHttpUrl(s) {
  if (/[\s\p{Cc}]/u.test(s)) return false;
  const m = /^([^:/?#]+):\/\/(.*)$/s.exec(s);
  if (!m || !/^https?$/i.test(m[1])) return false;
  const authority = m[2].split(/[/?#]/)[0];
  const at = authority.lastIndexOf('@');
  const hostPort = at >= 0 ? authority.slice(at + 1) : authority;
  let host;
  let port = null;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close <= 1) return false;
    host = hostPort.slice(1, close);
    const after = hostPort.slice(close + 1);
    if (after !== '') {
      if (!after.startsWith(':')) return false;
      port = after.slice(1);
    }
  } else {
    const colon = hostPort.indexOf(':');
    host = colon >= 0 ? hostPort.slice(0, colon) : hostPort;
    port = colon >= 0 ? hostPort.slice(colon + 1) : null;
  }
  return host !== '' && (port === null || /^[0-9]*$/.test(port));
}

function base64(bytes) {
  let binary = '';
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  return btoa(binary);
}

/** Reads a file into a FileValue (§24), or returns { message } when it cannot. */
async function fileValue(input, file) {
  const limit = input.maxBytes ?? DEFAULT_MAX_BYTES;
  const mediaType = file.type || 'application/octet-stream';
  if (Array.isArray(input.accept) && !accepts(input.accept, mediaType)) {
    return { message: `This file is ${mediaType}; choose one of ${input.accept.join(', ')}.` };
  }
  if (file.size > limit) return { message: `This file has ${file.size} bytes; it must be at most ${formatBytes(limit)}.` };
  // crypto.subtle exists only in a secure context: https, or http on this computer
  // (127.0.0.1, localhost). Plain http from another host cannot hash the file.
  if (!window.isSecureContext || !crypto.subtle) {
    return {
      message:
        'This page cannot send a file over plain http from another computer (the browser hashes files only on https or on this computer). Open the page over https, or on the computer that asks.',
    };
  }
  let bytes;
  try {
    bytes = new Uint8Array(await file.arrayBuffer());
  } catch {
    return { message: 'Could not read this file. Choose it again.' };
  }
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  const sha256 = [...digest].map((x) => x.toString(16).padStart(2, '0')).join('');
  return { value: { name: file.name, mediaType, size: bytes.length, sha256, data: base64(bytes) } };
}

/**
 * Reads the field of a question with `input`: { skip: true } when empty, { value } when it fits,
 * { message } otherwise. The checks mirror the core's (§24) for a quick message; the server
 * decides.
 */
async function readInput(q, fieldset) {
  const input = q.input;
  const kind = input.kind;
  if (kind === 'boolean') {
    const chosen = fieldset.querySelector('.input-field input[type=radio]:checked');
    if (!chosen || chosen.dataset.value === '') return { skip: true };
    return { value: chosen.dataset.value === 'true' };
  }
  const control = fieldset.querySelector('.value-input');
  if (kind === 'file') {
    const file = control.files && control.files[0];
    return file ? fileValue(input, file) : { skip: true };
  }
  const raw = control.value;
  if (raw === '') {
    if (control.validity && control.validity.badInput) {
      return { message: kind === 'number' || kind === 'integer' ? 'Must be a number.' : 'Must be complete, or left empty to skip.' };
    }
    return { skip: true };
  }
  const bounds = (value, cmp, above, below) => {
    if (input.minimum !== undefined && cmp(value, input.minimum) < 0) return { message: `Must be ${above} ${input.minimum}.` };
    if (input.maximum !== undefined && cmp(value, input.maximum) > 0) return { message: `Must be ${below} ${input.maximum}.` };
    return null;
  };
  switch (kind) {
    case 'text':
    case 'secret': {
      const length = [...raw].length;
      if (input.minLength !== undefined && length < input.minLength) return { message: `Must be at least ${input.minLength} characters long.` };
      if (input.maxLength !== undefined && length > input.maxLength) return { message: `Must be at most ${input.maxLength} characters long.` };
      return { value: raw };
    }
    case 'number':
    case 'integer': {
      const n = Number(raw);
      if (!Number.isFinite(n)) return { message: 'Must be a number.' };
      if (kind === 'integer' && !Number.isInteger(n)) return { message: 'Must be a whole number.' };
      if (kind === 'integer' && Math.abs(n) > MAX_SAFE) return { message: `Must be a whole number between -${MAX_SAFE} and ${MAX_SAFE}.` };
      return bounds(n, (a, b) => a - b, 'at least', 'at most') || { value: n };
    }
    case 'date':
      if (!/^\d{4}-\d{2}-\d{2}$/.test(raw)) return { message: 'Must be a date as YYYY-MM-DD.' };
      return bounds(raw, (a, b) => (a < b ? -1 : a > b ? 1 : 0), 'on or after', 'on or before') || { value: raw };
    case 'datetime': {
      const value = toRfc3339(raw);
      if (value === null) return { message: 'Must be a date and time.' };
      const at = Date.parse(value);
      return bounds(at, (a, b) => a - Date.parse(b), 'at or after', 'at or before') || { value };
    }
    case 'email': {
      const parts = raw.split('@');
      if (parts.length !== 2 || parts[0] === '' || parts[1] === '') return { message: 'Must be an email address: one @ between non-empty parts.' };
      return { value: raw };
    }
    case 'url':
      return isHttpUrl(raw) ? { value: raw } : { message: 'Must be an absolute http or https address (http://… or https://…).' };
    default:
      return { value: raw };
  }
}

/** Whether `text` is a unified diff: it has `@@` hunk lines. */
function isDiff(text) {
  return /^@@ /m.test(text);
}

/**
 * Puts an option's preview in `pre` as text; a unified diff line by line, its added and removed
 * lines in spans of their own (still text, never HTML).
 */
function fillPreview(pre, text) {
  pre.replaceChildren();
  pre.classList.toggle('diff', isDiff(text));
  if (!isDiff(text)) {
    pre.textContent = text;
    return;
  }
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    let kind = 'diff-context';
    if (line.startsWith('@@')) kind = 'diff-hunk';
    else if (line.startsWith('+++ ') || line.startsWith('--- ') || line.startsWith('diff ') || line.startsWith('index ')) kind = 'diff-file';
    else if (line.startsWith('+')) kind = 'diff-add';
    else if (line.startsWith('-')) kind = 'diff-del';
    pre.append(el('span', { class: kind, text: line }));
    if (i < lines.length - 1) pre.append('\n');
  });
}

/**
 * The preview box of a question whose options have one: it shows the focused option's
 * preview, else the selected one's; nothing when neither has one.
 */
function addPreviews(fieldset, list, options, base) {
  if (!options.some((o) => typeof o.preview === 'string')) return;
  const id = `${base}-preview`;
  const title = el('p', { class: 'preview-title', id: `${id}-title` });
  const pre = el('pre', { class: 'preview', id, tabindex: 0, role: 'region', 'aria-labelledby': `${id}-title` });
  const wrap = el('div', { class: 'preview-box' }, title, pre);
  wrap.hidden = true;
  let shown = null;
  const show = (index) => {
    const option = index === null ? undefined : options[index];
    if (!option || typeof option.preview !== 'string') {
      wrap.hidden = true;
      shown = null;
      return;
    }
    wrap.hidden = false;
    if (shown === index) return;
    shown = index;
    title.replaceChildren('Preview of ', el('bdi', { text: splitRecommended(option.label)[0] }));
    fillPreview(pre, option.preview);
  };
  const indexOf = (control) => (control && control.dataset && control.dataset.labelIndex !== undefined ? Number(control.dataset.labelIndex) : null);
  const selected = () => {
    const checked = [...list.querySelectorAll('input:checked')].map(indexOf).filter((i) => i !== null && typeof options[i].preview === 'string');
    return checked.length ? checked[checked.length - 1] : null;
  };
  list.addEventListener('focusin', (e) => {
    const i = indexOf(e.target);
    show(i !== null && typeof options[i].preview === 'string' ? i : selected());
  });
  list.addEventListener('change', (e) => {
    const i = indexOf(e.target);
    show(i !== null && e.target.checked && typeof options[i].preview === 'string' ? i : selected());
  });
  list.addEventListener('focusout', (e) => {
    if (!list.contains(e.relatedTarget)) show(selected());
  });
  for (const input of list.querySelectorAll('input[data-label-index]')) {
    if (typeof options[indexOf(input)].preview === 'string') input.setAttribute('aria-controls', id);
  }
  fieldset.append(wrap);
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

  // A question with `input` (§24) asks for a value in a field of its kind, not for options.
  if (hasInput(q)) {
    renderInput(fieldset, q, base);
    return fieldset;
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
  addPreviews(fieldset, list, options, base);
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

/**
 * Reads the form into an answer, or returns { error, focus } for what still needs a choice; a
 * value that does not fit its field gets its message next to the field.
 */
async function collect(b) {
  const answers = [];
  const fieldsets = b.form.querySelectorAll('fieldset.question');
  let misfit = null;
  for (const [qi, q] of b.p.questions.entries()) {
    const fs = fieldsets[qi];
    if (hasInput(q)) {
      const item = { id: q.id, selected: [] };
      const read = await readInput(q, fs);
      if (read.message !== undefined) {
        const control = showFieldError(fs, read.message);
        misfit ??= control;
      } else if (!read.skip) {
        item.value = read.value;
      }
      answers.push(item);
      continue;
    }
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
  if (misfit) return { error: 'Check the answer marked above.', focus: misfit };
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
    const field = fieldOfRefusal(b, result);
    if (field) {
      const control = showFieldError(field, `Not accepted: ${errorText(result)}`);
      b.error.textContent = 'Check the answer marked above.';
      if (control) control.focus();
    } else {
      b.error.textContent = errorText(result);
    }
  }
}

/**
 * The fieldset of the question with `input` that a BAD_ANSWER refusal names (its message starts
 * `question <id> `; the longest id that fits, should one id begin another), or null.
 */
function fieldOfRefusal(b, result) {
  const error = result.data && result.data.error;
  if (!error || error.code !== 'BAD_ANSWER' || typeof error.message !== 'string') return null;
  const fieldsets = b.form.querySelectorAll('fieldset.question');
  let best = -1;
  b.p.questions.forEach((q, qi) => {
    if (!hasInput(q) || !error.message.startsWith(`question ${q.id} `)) return;
    if (best < 0 || String(q.id).length > String(b.p.questions[best].id).length) best = qi;
  });
  return best < 0 ? null : fieldsets[best];
}

async function submitBatch(b) {
  if (b.busy || b.reading) return;
  for (const fieldset of b.form.querySelectorAll('fieldset.question')) clearFieldError(fieldset);
  b.error.textContent = '';
  // Reading a file takes a moment: a second submit meanwhile does nothing.
  b.reading = true;
  let read;
  try {
    read = await collect(b);
  } finally {
    b.reading = false;
  }
  // Settled (and taken off) while the file was read.
  if (batches.get(b.p.ticket) !== b) return;
  const { answer, error, focus } = read;
  if (error) {
    b.error.textContent = error;
    if (focus) focus.focus();
    return;
  }
  settleBatch(b, `api/v1/questions/${b.p.ticket}/answer`, answer, about('Answer sent: ', b.p));
}

function dismissBatch(b) {
  if (b.busy) return;
  settleBatch(b, `api/v1/questions/${b.p.ticket}/cancel`, {}, about('Dismissed: ', b.p));
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
    const result = await post(`api/v1/questions/${b.p.ticket}/extend`, { ms });
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

/**
 * Every pending batch the page knows, drawn or not: ticket → P, in ticket (arrival) order. Only
 * a window of them is drawn (`batches` holds those drawn so far, kept while they are filtered
 * out so that a half-filled form survives), so that thousands waiting cost a screenful.
 */
const waiting = new Map();
/** Tickets the stream or an answer took off: a list read earlier never brings them back. */
const gone = new Set();
/** Whether `waiting` is in ticket order (a replayed older ticket can come late). */
let inOrder = true;
/** `total` of the last page read while the whole list was not read yet (the title's count). */
let totalHint = 0;
let listRead = false;

/** How many batches the list shows at first, and how many more each "Show more" adds. */
const WINDOW = 30;
/** With several agents: the batches each agent's group shows at first, the groups at first. */
const GROUP_WINDOW = 3;
const GROUPS_WINDOW = 20;
const STEP = 30;
/** At most this many batches are drawn per task: a long window is drawn over several. */
const DRAW_SLICE = 12;
/** The filter box appears from this many waiting batches on (fewer need no search). */
const FILTER_FROM = 6;

function addBatch(p, fromList = false) {
  if (fromList && gone.has(p.ticket)) return;
  const shown = waiting.get(p.ticket);
  if (shown && otherAsk(shown, p)) {
    // A list read before the restart says nothing new; the stream brings the new run's.
    if (fromList) return;
    if (!(batches.get(p.ticket) || {}).busy) removeBatch(p.ticket, about('No longer waiting: ', shown), 'warn');
  }
  if (!fromList) gone.delete(p.ticket);
  const known = waiting.get(p.ticket);
  if (known) {
    if (fromList) return;
    known.expiresAt = p.expiresAt;
    const existing = batches.get(p.ticket);
    if (existing) {
      existing.p.expiresAt = p.expiresAt;
      existing.deadline.hidden = !p.expiresAt;
      showCountdown(existing, Date.now() + skew);
    }
    return;
  }
  if (p.ticket < lastTicket) inOrder = false;
  lastTicket = Math.max(lastTicket, p.ticket);
  waiting.set(p.ticket, p);
  // Said to a screen reader (the page's title and list change silently).
  if (!fromList) $('announce').textContent = `New question: ${shortText(p)}`;
  scheduleLayout();
}

// ---- the window, the filter, the groups -----------------------------------------------------

/** agent (null: none) → { section, count, list, more, limit } */
const groups = new Map();
let groupSeq = 0;
let windowSize = WINDOW;
let groupsShown = GROUPS_WINDOW;
let layoutQueued = false;
/** The ticket whose heading takes the focus once drawn (after "Show more"). */
let focusNext = null;

const moreButton = el('button', { type: 'button', class: 'show-more', id: 'show-more' });
moreButton.addEventListener('click', () => extendWindow(true));
const moreGroupsButton = el('button', { type: 'button', class: 'show-more', id: 'show-more-agents' });
moreGroupsButton.addEventListener('click', () => {
  groupsShown += GROUPS_WINDOW;
  scheduleLayout();
});
/** Scrolled near the end of the list, it draws more by itself. */
const nearEnd = typeof IntersectionObserver === 'function' ? new IntersectionObserver((entries) => {
  if (entries.some((e) => e.isIntersecting)) extendWindow(false);
}, { rootMargin: '600px 0px' }) : null;
if (nearEnd) nearEnd.observe(moreButton);

function extendWindow(byHand) {
  if (moreButton.hidden || !moreButton.isConnected) return;
  if (byHand) focusAfterMore($('batches'));
  windowSize += STEP;
  scheduleLayout();
}

function scheduleLayout() {
  if (layoutQueued) return;
  layoutQueued = true;
  setTimeout(layout, 0);
}

function groupKey(p) {
  return typeof p.agentId === 'string' ? p.agentId : null;
}

/** The lower-case words a filter looks in: agent, headers and questions of the batch. */
const haystacks = new Map();
function haystack(p) {
  let text = haystacks.get(p);
  if (text === undefined) {
    const parts = [p.agentId || ''];
    for (const q of p.questions) parts.push(q.header || '', q.question || '');
    text = parts.join('\n').toLowerCase();
    haystacks.set(p, text);
  }
  return text;
}

function filterTerms() {
  return $('filter').value.toLowerCase().split(/\s+/).filter((t) => t !== '');
}

function matches(p, terms) {
  if (terms.length === 0) return true;
  const text = haystack(p);
  return terms.every((t) => text.includes(t));
}

function groupOf(key) {
  let g = groups.get(key);
  if (g) return g;
  const id = `group-${++groupSeq}`;
  const title = el('h2', { class: 'group-title', id, tabindex: -1 });
  if (key === null) title.append('Asked without an agent');
  else title.append('Asked by ', el('bdi', { text: key }));
  const count = el('span', { class: 'group-count' });
  const list = el('div', { class: 'group-list' });
  const more = el('button', { type: 'button', class: 'show-more' });
  g = { key, count, list, more, limit: GROUP_WINDOW, section: null };
  more.addEventListener('click', () => {
    g.limit += STEP;
    focusAfterMore(list);
    scheduleLayout();
  });
  g.section = el('section', { class: 'group', 'aria-labelledby': id, 'data-agent': key ?? '' }, el('div', { class: 'group-head' }, title, ' ', count), list, more);
  groups.set(key, g);
  return g;
}

/** Makes `parent`'s children exactly `nodes`, moving as few as it can (a moved node loses focus). */
function placeChildren(parent, nodes) {
  const wanted = new Set(nodes);
  for (const child of [...parent.children]) if (!wanted.has(child)) child.remove();
  let cursor = parent.firstElementChild;
  for (const node of nodes) {
    if (node === cursor) cursor = cursor.nextElementSibling;
    else parent.insertBefore(node, cursor);
  }
}

const number = new Intl.NumberFormat();

/**
 * Draws the window of the list: the batches that match the filter, in arrival order, grouped by
 * agent when more than one asks; at most DRAW_SLICE new batches per call (it calls itself again
 * for the rest, so no task runs long).
 */
function layout() {
  layoutQueued = false;
  if (!inOrder) {
    const sorted = [...waiting.values()].sort((a, b) => a.ticket - b.ticket);
    waiting.clear();
    for (const p of sorted) waiting.set(p.ticket, p);
    inOrder = true;
  }
  const terms = filterTerms();
  const agents = new Set();
  for (const p of waiting.values()) agents.add(groupKey(p));
  const grouped = agents.size > 1;
  for (const key of groups.keys()) if (!agents.has(key)) groups.delete(key);
  const found = new Map();
  let matched = 0;
  for (const p of waiting.values()) {
    if (!matches(p, terms)) continue;
    matched++;
    const key = grouped ? groupKey(p) : null;
    let list = found.get(key);
    if (!list) found.set(key, (list = []));
    list.push(p);
  }
  let budget = DRAW_SLICE;
  let unfinished = false;
  const now = Date.now() + skew;
  const sections = (list, limit) => {
    const out = [];
    for (const p of list.slice(0, limit)) {
      let b = batches.get(p.ticket);
      if (!b) {
        if (budget === 0) {
          unfinished = true;
          break;
        }
        budget--;
        b = render(p);
        batches.set(p.ticket, b);
        showCountdown(b, now);
      }
      out.push(b.section);
    }
    return out;
  };
  const main = $('batches');
  main.classList.toggle('grouped', grouped);
  if (!grouped) {
    const list = found.get(null) || [];
    const drawn = sections(list, windowSize);
    const left = list.length - Math.min(list.length, windowSize);
    moreButton.hidden = left === 0;
    moreButton.textContent = `Show ${Math.min(STEP, left)} more (${number.format(left)} not shown yet)`;
    placeChildren(main, left > 0 ? [...drawn, moreButton] : drawn);
  } else {
    const shownGroups = [...found.entries()].slice(0, groupsShown);
    const nodes = [];
    for (const [key, list] of shownGroups) {
      const g = groupOf(key);
      g.count.textContent = `${number.format(list.length)} waiting`;
      const drawn = sections(list, g.limit);
      const left = list.length - Math.min(list.length, g.limit);
      g.more.hidden = left === 0;
      g.more.textContent = `Show ${Math.min(STEP, left)} more from this agent (${number.format(left)} not shown yet)`;
      placeChildren(g.list, drawn);
      nodes.push(g.section);
    }
    const hiddenGroups = found.size - shownGroups.length;
    moreGroupsButton.textContent = `Show more agents (${number.format(hiddenGroups)} not shown yet)`;
    placeChildren(main, hiddenGroups > 0 ? [...nodes, moreGroupsButton] : nodes);
  }
  showFilterState(terms, matched);
  refreshCount();
  placeFocus();
  if (unfinished) scheduleLayout();
}

/** After "Show more": the first batch it drew takes the focus (its heading), once drawn. */
function placeFocus() {
  if (focusNext === null) return;
  const drawn = focusNext.scope.querySelectorAll('section.batch');
  if (drawn.length <= focusNext.from) return;
  drawn[focusNext.from].querySelector('h2').focus();
  focusNext = null;
}

/** Where the focus goes once "Show more" in `scope` has drawn its first new batch. */
function focusAfterMore(scope) {
  focusNext = { scope, from: scope.querySelectorAll('section.batch').length };
}

function showFilterState(terms, matched) {
  const box = $('filter-box');
  const filter = $('filter');
  const show = waiting.size >= FILTER_FROM || filter.value !== '' || document.activeElement === filter;
  if (box.hidden === show) box.hidden = !show;
  const status = $('filter-status');
  const text = terms.length === 0 ? '' : matched === 0 ? 'No waiting batch matches.' : `${number.format(matched)} of ${number.format(waiting.size)} waiting batches ${matched === 1 ? 'matches' : 'match'}.`;
  if (status.textContent !== text) status.textContent = text;
}

let filterTimer = null;
$('filter').addEventListener('input', () => {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(scheduleLayout, 80);
});
$('filter').addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && e.target.value !== '') {
    e.target.value = '';
    scheduleLayout();
  }
});
// "/" anywhere but in a field goes to the filter, as on many sites.
document.addEventListener('keydown', (e) => {
  const t = e.target;
  const typing = t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  if (e.key !== '/' || typing || e.ctrlKey || e.metaKey || e.altKey || $('filter-box').hidden) return;
  e.preventDefault();
  $('filter').focus();
});

/** Takes batch `ticket` off the page, with a notice when `text` is given; returns the notice. */
function removeBatch(ticket, text, kind) {
  const p = waiting.get(ticket);
  if (!p) return undefined;
  waiting.delete(ticket);
  haystacks.delete(p);
  gone.add(ticket);
  const b = batches.get(ticket);
  batches.delete(ticket);
  let hadFocus = false;
  let next = null;
  if (b && b.section.isConnected) {
    hadFocus = b.section.contains(document.activeElement) || (b.hadFocus && document.activeElement === document.body);
    const drawn = [...$('batches').querySelectorAll('section.batch')];
    const at = drawn.indexOf(b.section);
    next = drawn[at + 1] || drawn[at - 1] || null;
    b.section.remove();
  }
  const item = text ? notice(text, kind) : undefined;
  refreshCount();
  scheduleLayout();
  if (hadFocus) {
    const heading = next && next.querySelector('h2');
    (heading || $('title')).focus();
  }
  return item;
}

function onResolved(ticket, outcome, by) {
  gone.add(ticket);
  const b = batches.get(ticket);
  const p = waiting.get(ticket);
  if (!p) return;
  // Our own submission in flight: its response says whether we or another screen won.
  if (b && b.busy) {
    b.resolvedOutcome = outcome;
    b.resolvedBy = by || null;
    return;
  }
  removeBatch(ticket, outcomeNotice(p, outcome, by), outcome === 'answered' ? 'info' : 'warn');
}

function onExtended(ticket, expiresAt) {
  const p = waiting.get(ticket);
  if (p) p.expiresAt = expiresAt;
  const b = batches.get(ticket);
  if (!b) return;
  b.p.expiresAt = expiresAt;
  b.deadline.hidden = false;
  showCountdown(b, Date.now() + skew);
}

/** Counts the reads of the list: a newer read makes an older one stop. */
let listReads = 0;

/**
 * Reads the whole list, page by page (each `after` the last ticket of the one before, so a
 * batch pending throughout is on exactly one page): adds what the page does not know yet —
 * never what the stream has taken off — and, when `prune`, at the end takes off what was shown
 * before the read began and is no longer pending (settled while no stream was open). It only
 * removes what it knew before: a batch the stream brings meanwhile is newer than the list and
 * stays. `then` runs after the first page (the first screen is drawn from it).
 */
async function readList({ first = PAGE_SIZE, prune = true, then = null } = {}) {
  const run = ++listReads;
  const known = new Set(waiting.keys());
  const live = new Set();
  let after = 0;
  let limit = first;
  for (;;) {
    const page = await fetchPage(after, limit);
    if (run !== listReads) return;
    if (page === UNAUTHORIZED || page === null) {
      if (then) then(page);
      return;
    }
    if (!listRead) totalHint = page.total;
    for (const p of page.pending) {
      live.add(p.ticket);
      addBatch(p, true);
    }
    refreshCount();
    if (then) {
      then(page);
      then = null;
    }
    if (!page.more || page.pending.length === 0) break;
    after = page.pending[page.pending.length - 1].ticket;
    limit = PAGE_SIZE;
  }
  listRead = true;
  if (!prune) return;
  for (const [ticket, p] of [...waiting]) {
    const b = batches.get(ticket);
    if (known.has(ticket) && !live.has(ticket) && !(b && b.busy)) removeBatch(ticket, about('No longer waiting: ', p), 'warn');
  }
}

/** Once a stream is open, reads the list again to drop what left while no stream was open. */
function reconcile() {
  readList();
}

/** The first page's size (the first screen), and every later page's (the API's largest). */
const FIRST_PAGE = 50;
const PAGE_SIZE = 1000;

/** One page of the list: { pending, total, more }, UNAUTHORIZED, or null when it failed. */
async function fetchPage(after, limit) {
  try {
    const before = Date.now();
    const response = await fetch(`api/v1/questions?after=${after}&limit=${limit}`, { credentials: 'same-origin' });
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
    return Array.isArray(body.pending) ? body : null;
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
    const response = await fetch('api/v1/me', { credentials: 'same-origin' });
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
  source = new EventSource('api/v1/events');
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
    fetchPage(0, 1).then((page) => {
      if (page === UNAUTHORIZED) return;
      setTimeout(() => {
        if (source.readyState === EventSource.CLOSED) connect();
      }, 3000);
    });
  });
}

refreshCount();
setInterval(tick, 1000);
showMe();
// The first page of the list first, drawn at once; then the stream, which replays what is
// pending (shown as it comes) and brings every change after; the rest of the list is read in
// pages meanwhile, and again each time the stream opens.
readList({
  first: FIRST_PAGE,
  prune: false,
  then: (page) => {
    if (page !== UNAUTHORIZED) connect();
  },
});
