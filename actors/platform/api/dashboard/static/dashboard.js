// The hermes-actors dashboard: plain JavaScript, no library, no build step.
//
// Every piece of data (transcripts, tool output, actor activity, session titles) is hostile text:
// it reaches the page through textContent only, never innerHTML. The Content-Security-Policy the
// daemon sends runs this file and nothing else.
'use strict';

const BASE = '/dashboard';
const EVENT_TYPES = [
  'turn_started', 'text_delta', 'reasoning_delta', 'tool_started', 'tool_progress', 'tool_finished',
  'status_update', 'approval_requested', 'clarify_requested', 'request_resolved', 'turn_finished',
  'usage_updated', 'fell_behind', 'resync', 'end',
];

const $ = (id) => document.getElementById(id);
let csrf = null;
let current = null;      // the open session's id
let feed = null;         // its EventSource
let reply = null;        // the assistant bubble text deltas go to
let searchTimer = null;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function notice(text) { $('notice').textContent = text || ''; }

async function call(path, options) {
  const response = await fetch(BASE + path, { credentials: 'same-origin', ...options });
  if (response.status === 401) { window.location.assign(BASE + '/login'); throw new Error('logged out'); }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((body.error && body.error.message) || response.statusText);
  return body;
}

function post(path, body) {
  return call(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Hermes-CSRF': csrf || '' },
    body: JSON.stringify(body || {}),
  });
}

// -- the live picture ------------------------------------------------------------------------

function cssState(state) { return 'state-' + String(state).replace(/[^a-z_]/g, ''); }

function drawNode(node) {
  const item = el('li');
  const box = el('div', 'node ' + cssState(node.state));
  box.dataset.path = node.path;
  box.dataset.state = node.state;
  box.appendChild(el('span', 'name', node.name || '(root)'));
  box.appendChild(el('span', 'kind', node.kind));
  box.appendChild(el('span', 'badge state', node.state));
  if (node.budget) box.appendChild(el('span', 'badge budget', 'budget ' + node.budget.used + '/' + node.budget.total));
  if (node.restarts) box.appendChild(el('span', 'badge warn restarts', 'restarts ' + node.restarts));
  if (node.mailbox_used) box.appendChild(el('span', 'meta', 'mailbox ' + node.mailbox_used + '/' + node.mailbox_capacity));
  const details = node.details || {};
  if (details.pending_requests) box.appendChild(el('span', 'badge warn', 'waiting for an answer'));
  if (node.last_error) box.appendChild(el('span', 'badge warn', node.last_error.type + ': ' + node.last_error.message));
  if (node.activity) box.appendChild(el('span', 'activity', node.activity));
  if (details.session_id && node.kind === 'session') {
    box.addEventListener('click', () => openSession(details.session_id));
  }
  item.appendChild(box);
  if (node.children && node.children.length) {
    const list = el('ul');
    node.children.forEach((child) => list.appendChild(drawNode(child)));
    item.appendChild(list);
  }
  return item;
}

function drawAttention(tree) {
  const waiting = [];
  (function visit(node) {
    if (node.kind === 'session' && node.details && node.details.pending_requests) waiting.push(node);
    (node.children || []).forEach(visit);
  })(tree);
  const box = $('attention');
  box.replaceChildren();
  waiting.forEach((node) => {
    const link = el('button', 'attention', 'session ' + node.details.session_id + ' is waiting for an answer');
    link.type = 'button';
    link.addEventListener('click', () => openSession(node.details.session_id));
    box.appendChild(link);
  });
}

function row(cells) {
  const tr = el('tr');
  cells.forEach((cell) => tr.appendChild(el('td', null, cell === null || cell === undefined ? '' : cell)));
  return tr;
}

function drawState(state) {
  const list = el('ul');
  list.appendChild(drawNode(state.tree));
  $('tree').replaceChildren(list);
  drawAttention(state.tree);
  const platforms = $('platforms').tBodies[0];
  platforms.replaceChildren();
  if (state.api) platforms.appendChild(row(['api', 'serving', state.api.in_flight + ' in flight', state.api.runs + ' runs', state.api.urls.join(' ')]));
  state.platforms.forEach((p) => platforms.appendChild(row([p.name, p.connection, p.received, p.sent, p.error])));
  const cron = $('cron').tBodies[0];
  cron.replaceChildren();
  state.cron.forEach((job) => cron.appendChild(row([
    job.name || job.id, job.schedule, job.running ? 'running' : job.state, job.next_run, job.last_status,
  ])));
}

function follow() {
  const live = new EventSource(BASE + '/api/live');
  live.addEventListener('state', (event) => {
    $('connection').textContent = 'live';
    drawState(JSON.parse(event.data));
  });
  live.addEventListener('error', () => { $('connection').textContent = 'reconnecting…'; });
}

// -- sessions --------------------------------------------------------------------------------

async function loadSessions() {
  const query = $('session-search').value;
  try {
    const found = await call('/api/sessions?q=' + encodeURIComponent(query));
    const list = $('sessions');
    list.replaceChildren();
    found.sessions.forEach((match) => {
      const s = match.session;
      const item = el('li', s.id === current ? 'current' : null);
      item.dataset.sessionId = s.id;
      item.appendChild(el('span', 'title', s.title || s.id));
      if (s.live) item.appendChild(el('span', 'badge live', 'live'));
      item.appendChild(el('span', 'badge', s.source));
      item.appendChild(el('span', 'preview', s.preview || ''));
      (match.hits || []).forEach((hit) => item.appendChild(el('span', 'hit', hit.role + ': ' + hit.snippet)));
      item.addEventListener('click', () => openSession(s.id));
      list.appendChild(item);
    });
  } catch (error) {
    notice('sessions: ' + error.message);
  }
}

function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part && part.text) || '').join('');
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

function addMessage(role, text, cls) {
  const box = el('div', 'msg ' + (cls || role));
  box.appendChild(el('span', 'role', role));
  const body = el('span', 'text', text);
  box.appendChild(body);
  $('transcript').appendChild(box);
  $('transcript').scrollTop = $('transcript').scrollHeight;
  return body;
}

function drawStored(message) {
  const m = message.message || {};
  if (m.role === 'system') return;  // the prompt the daemon built: long, and not the conversation
  const text = contentText(m.content);
  if (text) addMessage(m.role || '?', text, m.role === 'tool' ? 'tool' : m.role);
  (m.tool_calls || []).forEach((call) => {
    const fn = call.function || {};
    addMessage('tool call', (fn.name || '?') + ' ' + (fn.arguments || ''), 'tool');
  });
}

function setTurnControls(running) {
  $('interrupt').disabled = !running;
  $('steer').disabled = !running;
  $('steer-text').disabled = !running;
}

async function openSession(sessionId) {
  if (feed) { feed.close(); feed = null; }
  current = sessionId;
  reply = null;
  $('transcript').replaceChildren();
  $('pending').replaceChildren();
  $('session-title').textContent = 'Session ' + sessionId;
  setTurnControls(false);
  document.querySelectorAll('#sessions li').forEach((li) => li.classList.toggle('current', li.dataset.sessionId === sessionId));
  try {
    const shown = await call('/api/sessions/' + encodeURIComponent(sessionId));
    if (shown.session.title) $('session-title').textContent = shown.session.title + ' (' + sessionId + ')';
    if (shown.omitted) addMessage('…', shown.omitted + ' earlier messages not shown', 'status');
    shown.messages.forEach(drawStored);
  } catch (error) {
    notice('transcript: ' + error.message);
  }
  if (current !== sessionId) return;
  await subscribe(sessionId);
}

// Resolves once the daemon has subscribed (the stream's headers arrived): a message sent after
// that has all its events shown.
function subscribe(sessionId) {
  const source = new EventSource(BASE + '/api/sessions/' + encodeURIComponent(sessionId) + '/events');
  feed = source;
  EVENT_TYPES.forEach((type) => source.addEventListener(type, (event) => {
    if (feed !== source) return;
    onEvent(type, JSON.parse(event.data), sessionId);
  }));
  return new Promise((resolve) => {
    source.addEventListener('open', resolve, { once: true });
    source.addEventListener('error', resolve, { once: true });
  });
}

// The running turn's start is shown again to a page that subscribes mid-turn, after the stored
// transcript that already ends with its message.
function alreadyShown(text) {
  const last = $('transcript').lastElementChild;
  return last !== null && last.classList.contains('user') && last.querySelector('.text').textContent === text;
}

function onEvent(type, event, sessionId) {
  const own = !event.session_id || event.session_id === sessionId;
  switch (type) {
    case 'turn_started':
      if (own) {
        if (!alreadyShown(event.text)) addMessage('user', event.text);
        reply = addMessage('assistant', '');
        setTurnControls(true);
      }
      break;
    case 'text_delta':
      if (own) { if (!reply) reply = addMessage('assistant', ''); reply.textContent += event.text; }
      break;
    case 'tool_started':
      addMessage('tool ' + event.name, event.args_preview, 'tool');
      break;
    case 'tool_progress':
      addMessage('progress', event.text, 'tool');
      break;
    case 'tool_finished':
      addMessage('result ' + event.name + (event.ok ? '' : ' (failed)'), event.result_preview, 'tool');
      break;
    case 'status_update':
      addMessage(event.kind, event.text, 'status');
      break;
    case 'approval_requested':
      showApproval(event, sessionId);
      break;
    case 'clarify_requested':
      showClarify(event, sessionId);
      break;
    case 'request_resolved': {
      const card = document.querySelector('.card[data-request-id="' + CSS.escape(event.request_id) + '"]');
      if (card) card.remove();
      break;
    }
    case 'turn_finished':
      if (own) {
        if (!reply) reply = addMessage('assistant', '');
        if (event.final_text && reply.textContent !== event.final_text) reply.textContent = event.final_text;
        if (event.reason !== 'completed') addMessage('turn', event.reason + (event.error ? ': ' + event.error : ''), event.reason === 'error' ? 'error' : 'status');
        reply = null;
        setTurnControls(false);
        loadSessions();
      }
      break;
    case 'fell_behind':
      addMessage('…', 'some events were missed', 'status');
      break;
    case 'resync':
      openSession(sessionId);
      break;
    case 'end':
      if (feed) { feed.close(); feed = null; }
      addMessage('session', 'the session stopped (it wakes again when sent a message)', 'status');
      setTurnControls(false);
      break;
    default:
      break;
  }
}

function answerButton(sessionId, requestId, label, answer) {
  const button = el('button', 'answer', label);
  button.type = 'button';
  button.dataset.answer = answer;
  button.addEventListener('click', async () => {
    try {
      await post('/api/sessions/' + encodeURIComponent(sessionId) + '/answer', { pending_id: requestId, answer });
    } catch (error) {
      notice('answer: ' + error.message);
    }
  });
  return button;
}

function card(event, title) {
  const old = document.querySelector('.card[data-request-id="' + CSS.escape(event.request_id) + '"]');
  if (old) old.remove();
  const box = el('div', 'card');
  box.dataset.requestId = event.request_id;
  box.appendChild(el('strong', null, title));
  $('pending').appendChild(box);
  return box;
}

function showApproval(event, sessionId) {
  const box = card(event, 'Approve this command?');
  box.classList.add('approval');
  box.appendChild(el('pre', 'command', event.command));
  box.appendChild(el('p', 'description', event.description));
  event.choices.forEach((choice) => box.appendChild(answerButton(sessionId, event.request_id, choice, choice)));
}

function showClarify(event, sessionId) {
  const box = card(event, 'The agent asks');
  box.classList.add('clarify');
  box.appendChild(el('p', 'question', event.question));
  event.choices.forEach((choice) => box.appendChild(answerButton(sessionId, event.request_id, choice, choice)));
  if (event.allow_freetext) {
    const input = el('input', 'freetext');
    input.type = 'text';
    const send = el('button', 'answer', 'Answer');
    send.type = 'button';
    send.addEventListener('click', () => post('/api/sessions/' + encodeURIComponent(sessionId) + '/answer', {
      pending_id: event.request_id, answer: input.value,
    }).catch((error) => notice('answer: ' + error.message)));
    box.appendChild(input);
    box.appendChild(send);
  }
}

// -- actions ---------------------------------------------------------------------------------

async function sendChat(event) {
  event.preventDefault();
  const text = $('chat-text').value;
  if (!text.trim()) return;
  notice('');
  try {
    if (!current) {
      const created = await post('/api/sessions');
      await openSession(created.session_id);
      loadSessions();
    }
    const sent = await post('/api/sessions/' + encodeURIComponent(current) + '/messages', { text });
    $('chat-text').value = '';
    notice(sent.said);
  } catch (error) {
    notice('send: ' + error.message);
  }
}

async function act(path, body) {
  try {
    const said = await post(path, body);
    notice(said.said || '');
  } catch (error) {
    notice(error.message);
  }
}

async function start() {
  try {
    const state = await call('/api/state');
    csrf = state.csrf;
    drawState(state);
  } catch (error) {
    notice(error.message);
    return;
  }
  follow();
  loadSessions();
  $('chat').addEventListener('submit', sendChat);
  $('interrupt').addEventListener('click', () => current && act('/api/sessions/' + encodeURIComponent(current) + '/interrupt'));
  $('steer').addEventListener('click', () => {
    if (!current) return;
    act('/api/steer', { path: current, text: $('steer-text').value });
    $('steer-text').value = '';
  });
  $('new-session').addEventListener('click', () => {
    if (feed) { feed.close(); feed = null; }
    current = null;
    $('transcript').replaceChildren();
    $('pending').replaceChildren();
    $('session-title').textContent = 'New session';
    setTurnControls(false);
  });
  $('session-search').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(loadSessions, 300);
  });
  $('logout').addEventListener('click', async () => {
    await post('/logout').catch(() => null);
    window.location.assign(BASE + '/login');
  });
}

document.addEventListener('DOMContentLoaded', start);
