// minikafka cluster dashboard: one Server-Sent Events stream (/v1/stream), no libraries.
//
// The first `view` after (re)connecting carries the whole throughput window and the latest
// events; later ones only what is new. Every new connection starts from a clean slate.
"use strict";

(() => {
  const MAX_EVENTS = 5000; // as many as the serving broker keeps
  const GROUP_GAP_MS = 10000; // one failure's events: each within this of the one before
  const DEFAULT_LIMIT = 200;
  const TOTAL_RATES = [
    "messages_in",
    "bytes_in",
    "bytes_out",
    "replication_bytes_in",
    "follower_bytes_out",
  ];
  const TOPIC_RATES = ["messages_in", "bytes_in", "bytes_out", "replication_bytes_in"];
  const RATE_LABEL = {
    messages_in: "messages in",
    bytes_in: "bytes in",
    bytes_out: "bytes out",
    replication_bytes_in: "replication bytes in",
    replication_bytes_out: "replication bytes out",
    follower_bytes_out: "bytes out from followers",
  };
  const STATUS_TEXT = {
    offline: "offline",
    under_min_isr: "under min ISR",
    under_replicated: "under-replicated",
    ok: "ok",
  };
  const BROKER_STATUS_TITLE = {
    alive: "registered in ZooKeeper and answering",
    unreachable: "registered but not answering its admin endpoint (paused or not answering)",
    down: "not registered in ZooKeeper and not answering (stopped or crashed)",
  };
  const WAITING_TITLE =
    "partitions whose leader or an ISR member is unreachable or down: the leader of an " +
    "acks=all write waits for every ISR member, so their writes stall until that broker " +
    "answers again or leaves the ISR (a killed broker: its leaders drop it " +
    "replica.lag.disconnected.max.ms after its connections closed; the partitions it led " +
    "wait for its ZooKeeper session to expire)";
  const SVG_NS = "http://www.w3.org/2000/svg";
  const W = 300; // sparkline viewBox
  const H = 60;
  const DASH = "–";

  // --- helpers ---------------------------------------------------------------------------

  const $ = (sel) => document.querySelector(sel);
  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  const esc = (v) => (v === null || v === undefined ? "" : String(v).replace(/[&<>"']/g, (c) => ESC[c]));
  const val = (v) => (v === null || v === undefined ? DASH : esc(v));
  const pad = (n, w = 2) => String(n).padStart(w, "0");

  function clock(ms, withMs = true) {
    if (typeof ms !== "number" || !Number.isFinite(ms)) return DASH;
    const d = new Date(ms);
    const s = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return withMs ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
  }

  function fmtNum(v) {
    const a = Math.abs(v);
    if (a === 0) return "0";
    if (a < 10) return v.toFixed(1);
    if (a < 1e3) return String(Math.round(v));
    if (a < 1e6) return (v / 1e3).toFixed(a < 1e5 ? 1 : 0) + "k";
    if (a < 1e9) return (v / 1e6).toFixed(a < 1e8 ? 1 : 0) + "M";
    return (v / 1e9).toFixed(1) + "G";
  }

  function fmtBytes(v) {
    const a = Math.abs(v);
    if (a < 1e3) return `${Math.round(v)} B`;
    const units = ["kB", "MB", "GB", "TB"];
    let x = v / 1e3;
    let i = 0;
    while (Math.abs(x) >= 1e3 && i < units.length - 1) {
      x /= 1e3;
      i += 1;
    }
    return `${x.toFixed(Math.abs(x) < 100 ? 1 : 0)} ${units[i]}`;
  }

  function fmtRate(rate, v) {
    if (v === null || v === undefined) return DASH;
    return rate === "messages_in" ? `${fmtNum(v)} msg/s` : `${fmtBytes(v)}/s`;
  }

  function ago(ms) {
    if (ms === null || ms === undefined || ms < 0) return DASH;
    const s = ms / 1000;
    if (s < 100) return `${s.toFixed(1)} s ago`;
    if (s < 3600) return `${Math.round(s)} s ago`;
    return `${(s / 3600).toFixed(1)} h ago`;
  }

  const yesNo = (b) => (b === true ? "yes" : b === false ? "no" : "?");

  // Kafka's own topics (__consumer_offsets...), as cluster_view.is_internal says.
  const isInternal = (t) => typeof t === "string" && t.startsWith("__");
  const userFirst = (a, b) => isInternal(a) - isInternal(b) || (a < b ? -1 : a > b ? 1 : 0);

  // --- page state ------------------------------------------------------------------------

  const params = new URLSearchParams(window.location.search);
  let topicFilter = params.get("topic") || "";
  // Internal topics are hidden unless asked for (?internal=1): their partitions, events
  // and charts would bury the user's.
  let showInternal = params.get("internal") === "1";
  const limitParam = parseInt(params.get("limit") || "", 10);
  const limit = Number.isFinite(limitParam) && limitParam >= 0 ? limitParam : DEFAULT_LIMIT;

  let es = null;
  let retryTimer = null;
  let resetOnNext = false;
  let updates = 0;
  let lastUpdateMs = 0;
  let live = false;
  let lastBrokers = [];
  let brokerStatus = new Map(); // id → alive, unreachable or down, from the latest view
  let topicsKey = null;

  // events: seq → event; `shownMax` is the highest seq in the list
  let events = new Map();
  let shownMax = 0;
  let eventsHtml = "";
  const openGroups = new Set(); // the groups opened on their members, by first seq
  // throughput: arrays of `win` values per second, the last one for second `endS`
  let thr = null;

  function resetData() {
    events = new Map();
    shownMax = 0;
    thr = { endS: null, win: 300, total: {}, topics: new Map() };
    $("#events").innerHTML = "";
    eventsHtml = "";
  }

  // --- connection ------------------------------------------------------------------------

  function setConnection(isLive) {
    live = isLive;
    const el = $("#connection");
    el.dataset.state = isLive ? "live" : "reconnecting";
    el.textContent = isLive ? "live" : "reconnecting…";
    renderAlternates();
  }

  function connect() {
    if (retryTimer !== null) {
      clearTimeout(retryTimer);
      retryTimer = null;
    }
    if (es !== null) es.close();
    resetData();
    setConnection(false);
    const q = new URLSearchParams();
    if (topicFilter) q.set("topic", topicFilter);
    q.set("limit", String(limit));
    q.set("internal", showInternal ? "true" : "false");
    const source = new EventSource("/v1/stream?" + q.toString());
    es = source;
    source.onopen = () => {
      if (es !== source) return;
      resetOnNext = true; // a (re)connection starts over with a full view
      setConnection(true);
    };
    source.onerror = () => {
      if (es !== source) return;
      setConnection(false);
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (e.g. an HTTP error): try again ourselves.
        retryTimer = setTimeout(connect, 3000);
      }
    };
    source.addEventListener("view", (ev) => {
      if (es !== source) return;
      let data;
      try {
        data = JSON.parse(ev.data);
      } catch (err) {
        console.warn("dashboard: bad view payload", err);
        return;
      }
      if (!live) setConnection(true);
      if (resetOnNext) {
        resetData();
        resetOnNext = false;
      }
      onView(data);
    });
  }

  function onView(data) {
    updates += 1;
    lastUpdateMs = Date.now();
    const cluster = data.cluster || {};
    renderHeader(cluster);
    renderBrokers(cluster);
    renderTopics(data.topics || []);
    renderPartitions(data.partitions || {});
    addEvents(data.events || []);
    ingestThroughput(data.throughput, data.topics || []);
    renderThroughput();
    renderUpdated();
    document.body.dataset.updates = String(updates);
    document.body.dataset.lastEventSeq = String(shownMax);
  }

  // --- header ----------------------------------------------------------------------------

  // The counts are the whole cluster's; each says how many of it are internal topics'.
  function sumItem(key, label, n, internal, cls = "", title = "") {
    const note = internal
      ? ` <span class="internal-note">(${esc(internal)} internal${showInternal ? "" : ", hidden"})</span>`
      : "";
    const t = title ? ` title="${esc(title)}"` : "";
    return `<span class="sum${n && cls ? " " + cls : ""}" data-count="${key}" data-internal="${esc(internal || 0)}"${t}><b>${val(n)}</b> ${label}${note}</span>`;
  }

  function renderHeader(c) {
    const s = c.summary || {};
    const i = s.internal || {};
    const brokersBad = s.brokers_alive !== undefined && s.brokers_alive < s.brokers;
    const parts = [
      `<span class="sum${brokersBad ? " bad" : ""}" data-count="brokers"><b>${val(s.brokers_alive)}/${val(s.brokers)}</b> brokers alive</span>`,
      sumItem("topics", "topics", s.topics, i.topics),
      sumItem("partitions", "partitions", s.partitions, i.partitions),
      sumItem("offline", "offline", s.offline, i.offline, "bad"),
      sumItem("under_min_isr", "under min ISR", s.under_min_isr, i.under_min_isr, "bad"),
      sumItem("under_replicated", "under-replicated", s.under_replicated, i.under_replicated, "warn"),
    ];
    // Only while there are some: the usual 0 would be noise. Their acks=all writes stall
    // until the broker answers again or leaves the ISR (its session expiring, if killed).
    if (s.waiting_on_unreachable) {
      const label = `partition${s.waiting_on_unreachable === 1 ? "" : "s"} waiting on an unreachable broker`;
      parts.push(sumItem("waiting_on_unreachable", label, s.waiting_on_unreachable, i.waiting_on_unreachable, "bad", WAITING_TITLE));
    }
    // Only while partitions move: how many a reassignment is moving between brokers.
    if (s.reassigning) {
      parts.push(sumItem("reassigning", `partition${s.reassigning === 1 ? "" : "s"} moving between brokers`, s.reassigning, 0, "warn"));
    }
    $("#summary").innerHTML = parts.join("");
    $("#internal-count").textContent = i.topics ? `(${i.topics})` : "";

    $("#served-by").textContent = c.served_by === undefined ? DASH : `broker ${c.served_by}`;
    const ctl = c.controller || {};
    const ctlEl = $("#controller");
    if (ctl.id === null || ctl.id === undefined || ctl.id < 0) {
      ctlEl.textContent = "none";
      ctlEl.className = "bad";
    } else {
      ctlEl.textContent = `broker ${ctl.id} (epoch ${ctl.epoch ?? DASH})`;
      ctlEl.className = "";
    }
    const zk = c.zookeeper || {};
    const zkEl = $("#zookeeper");
    let zkText = "?";
    let zkCls = "";
    if (zk.connected === false) {
      zkText = "disconnected";
      zkCls = "bad";
    } else if (zk.answered === false) {
      zkText = "not answering";
      zkCls = "warn";
    } else if (zk.connected === true) {
      zkText = "connected";
      zkCls = "good";
    }
    zkEl.textContent = zkText;
    zkEl.className = zkCls;
    zkEl.title = zk.error ? String(zk.error) : "the serving broker's ZooKeeper session";

    const problems = [];
    if (s.offline) problems.push(`${s.offline} offline`);
    if (s.under_min_isr) problems.push(`${s.under_min_isr} under min ISR`);
    if (s.under_replicated) problems.push(`${s.under_replicated} under-replicated`);
    if (s.waiting_on_unreachable) problems.push(`${s.waiting_on_unreachable} waiting on an unreachable broker`);
    if (brokersBad) problems.push(`${s.brokers - s.brokers_alive} broker(s) not alive`);
    document.title = problems.length ? `(!) minikafka: ${problems.join(", ")}` : "minikafka";
  }

  function renderUpdated() {
    const el = $("#updated");
    if (!lastUpdateMs) {
      el.textContent = "never updated";
      return;
    }
    const age = Math.round((Date.now() - lastUpdateMs) / 1000);
    const stale = age >= 3;
    el.textContent = `updated ${clock(lastUpdateMs, false)}${stale ? ` (${age} s ago)` : ""}`;
    el.classList.toggle("stale", stale);
  }

  // Another broker's dashboard is linked only where this browser can reach it: the same
  // host, or loopback both. In docker-compose the brokers know each other as brokerN, a
  // name the host's browser does not resolve (there, open the published ports).
  const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);
  function linkable(url) {
    if (typeof url !== "string" || !/^https?:\/\//.test(url)) return false;
    try {
      const host = new URL(url).hostname;
      const here = window.location.hostname;
      return host === here || (LOOPBACK.has(host) && LOOPBACK.has(here));
    } catch (e) {
      return false;
    }
  }

  function renderAlternates() {
    const el = $("#alternates");
    const others = lastBrokers.filter(
      (b) => !b.serving && b.status === "alive" && linkable(b.admin_url),
    );
    if (live || !others.length) {
      el.hidden = true;
      return;
    }
    const q = window.location.search; // the same topic and toggles there
    el.innerHTML =
      "other dashboards: " +
      others.map((b) => `<a href="${esc(b.admin_url.replace(/\/+$/, "") + "/" + q)}">broker ${esc(b.id)}</a>`).join(" · ");
    el.hidden = false;
  }

  // --- brokers ---------------------------------------------------------------------------

  let brokersHtml = "";

  // Replication throttles (KIP-73): what the broker sends / fetches for throttled replicas.
  function throttled(b) {
    const out = b.throttled_out, inn = b.throttled_in;
    if (typeof out !== "number" || typeof inn !== "number") return DASH;
    if (out === 0 && inn === 0) return DASH;
    return `${fmtRate("bytes", out)} out, ${fmtRate("bytes", inn)} in`;
  }

  function renderBrokers(c) {
    const brokers = c.brokers || [];
    lastBrokers = brokers;
    brokerStatus = new Map(brokers.map((b) => [b.id, b.status]));
    let unreachable = 0;
    const rows = brokers.map((b) => {
      const status = ["alive", "unreachable", "down"].includes(b.status) ? b.status : "down";
      if (status === "unreachable") unreachable += 1;
      const badges =
        (b.is_controller ? ' <span class="badge controller">controller</span>' : "") +
        (b.serving ? ' <span class="badge serving">serving</span>' : "");
      const endpoints = (b.endpoints || []).length ? esc(b.endpoints.join(", ")) : DASH;
      let idHtml = `<b>${esc(b.id)}</b>`;
      if (!b.serving && linkable(b.admin_url)) {
        idHtml = `<a class="admin-link" href="${esc(b.admin_url.replace(/\/+$/, "") + "/")}" title="open broker ${esc(b.id)}'s dashboard">${idHtml}</a>`;
      }
      let title = BROKER_STATUS_TITLE[status];
      if (b.error) title += `: ${b.error}`;
      const zk = b.zookeeper_connected === true ? "connected" : b.zookeeper_connected === false ? "disconnected" : "?";
      const zkCls = b.zookeeper_connected === false ? " bad" : "";
      const epoch = b.broker_epoch === null || b.broker_epoch === undefined || b.broker_epoch < 0 ? DASH : esc(b.broker_epoch);
      return (
        `<tr data-broker="${esc(b.id)}" data-status="${status}" class="st-${status}">` +
        `<td class="id">${idHtml}${badges}</td>` +
        `<td class="address">${endpoints}</td>` +
        `<td class="status" title="${esc(title)}">${status}</td>` +
        `<td class="registered${b.registered === false ? " bad" : ""}">${yesNo(b.registered)}</td>` +
        `<td class="epoch">${epoch}</td>` +
        `<td class="zk${zkCls}">${zk}</td>` +
        `<td class="partitions num">${val(b.partitions)}</td>` +
        `<td class="leaders num">${val(b.leaders)}</td>` +
        `<td class="throttled num">${throttled(b)}</td>` +
        `</tr>`
      );
    });
    const html = rows.join("");
    if (html !== brokersHtml) {
      $("#brokers tbody").innerHTML = html;
      brokersHtml = html;
    }
    const note = $("#brokers-note");
    if (unreachable) {
      note.textContent =
        "unreachable: registered in ZooKeeper but its admin endpoint did not answer in time " +
        "(paused or not answering); hover the status for the error.";
      note.hidden = false;
    } else {
      note.hidden = true;
    }
  }

  // --- topic filter ----------------------------------------------------------------------

  function renderTopics(topics) {
    const key = topics.join("\u0000") + "\u0001" + topicFilter + "\u0001" + showInternal;
    if (key === topicsKey) return;
    topicsKey = key;
    const sel = $("#topic-filter");
    const opts = ['<option value="">all topics</option>'];
    if (topicFilter && !topics.includes(topicFilter)) {
      opts.push(`<option value="${esc(topicFilter)}">${esc(topicFilter)} (not found)</option>`);
    }
    const option = (t) => `<option value="${esc(t)}">${esc(t)}</option>`;
    for (const t of topics) if (!isInternal(t)) opts.push(option(t));
    // Hidden internal topics are left out, unless one is the one selected.
    const internal = topics.filter((t) => isInternal(t) && (showInternal || t === topicFilter));
    if (internal.length) opts.push(`<optgroup label="internal topics">${internal.map(option).join("")}</optgroup>`);
    sel.innerHTML = opts.join("");
    sel.value = topicFilter;
  }

  function setQuery(name, value) {
    const q = new URLSearchParams(window.location.search);
    if (value) q.set(name, value);
    else q.delete(name);
    const qs = q.toString();
    window.history.replaceState(null, "", window.location.pathname + (qs ? "?" + qs : ""));
  }

  // A new selection of partitions: a new stream (it starts with a full view).
  function reselect() {
    topicsKey = null;
    $("#partitions tbody").innerHTML = "";
    partitionsHtml = "";
    $("#partition-count").textContent = "loading…";
    connect();
  }

  function onFilterChange() {
    const value = $("#topic-filter").value;
    if (value === topicFilter) return;
    topicFilter = value;
    setQuery("topic", topicFilter);
    reselect();
  }

  function onInternalToggle() {
    showInternal = $("#show-internal").checked;
    setQuery("internal", showInternal ? "1" : "");
    reselect();
  }

  // --- partitions ------------------------------------------------------------------------

  let partitionsHtml = "";

  function chip(id, cls, title) {
    return `<span class="chip${cls}"${title ? ` title="${title}"` : ""}>${esc(id)}</span>`;
  }

  // A leader or ISR member whose broker is unreachable or down (the row's
  // `unreachable_brokers`): why acks=all writes to the partition stall.
  function stallTitle(id, leader) {
    const st = brokerStatus.get(id) === "down" ? "down (not registered) but still in the ISR" : "unreachable (its admin endpoint does not answer)";
    const role = leader ? "the leader" : "in the ISR";
    return (
      `broker ${id} is ${st}: ${role}, acks=all writes to this partition wait on it` +
      (leader ? "" : " until it answers again or is dropped from the ISR")
    );
  }

  function renderPartitions(p) {
    const rows = p.partitions || [];
    const out = [];
    for (const r of rows) {
      const status = STATUS_TEXT[r.status] ? r.status : "offline";
      const isr = r.isr || [];
      const isrSet = new Set(isr);
      const offline = new Set(r.offline_replicas || []);
      const outOfSync = r.out_of_sync || (r.replicas || []).filter((x) => !isrSet.has(x));
      const tp = `${r.topic}-${r.partition}`;
      const stalled = new Set(r.unreachable_brokers || []);

      let leader;
      if (r.leader === null || r.leader === undefined || r.leader < 0) {
        leader = '<span class="bad">none</span>';
      } else if (r.leader_reachable === false) {
        leader = `${esc(r.leader)} <span class="badge unreachable" title="the leader's broker did not answer">not answering</span>`;
      } else {
        leader = esc(r.leader);
      }
      if (stalled.has(r.leader)) {
        leader = `<span class="stalled" title="${esc(stallTitle(r.leader, true))}">${leader}</span>`;
      }

      const adding = new Set(r.adding_replicas || []);
      const removing = new Set(r.removing_replicas || []);
      const replicas = (r.replicas || [])
        .map((id) => {
          let cls = "";
          const t = [];
          if (id === r.leader) {
            cls += " leader";
            t.push("leader");
          }
          if (adding.has(id)) {
            cls += " adding";
            t.push("being added by a reassignment: catching up, then joins the ISR");
          }
          if (removing.has(id)) {
            cls += " removing";
            t.push("being removed by a reassignment: leaves once every new replica is in the ISR");
          }
          if (offline.has(id)) {
            cls += " offline";
            t.push("offline");
          } else if (!isrSet.has(id)) {
            cls += " out";
            t.push("out of sync");
          }
          if (stalled.has(id)) {
            cls += " unreachable";
            t.push(stallTitle(id, id === r.leader));
          }
          return chip(id, cls, esc(t.join(", ")));
        })
        .join("");

      const isrChip = (id) => {
        if (stalled.has(id)) return chip(id, " unreachable" + (offline.has(id) ? " offline" : ""), esc(stallTitle(id, id === r.leader)));
        return chip(id, offline.has(id) ? " offline" : "", offline.has(id) ? "in ISR but offline" : "");
      };
      const isrChips =
        isr.map(isrChip).join("") +
        outOfSync
          .map((id) => chip(id, " out" + (offline.has(id) ? " offline" : ""), offline.has(id) ? "out of sync, offline" : "out of sync"))
          .join("");

      let lag = DASH;
      if (Array.isArray(r.replica_states) && r.replica_states.length) {
        lag = r.replica_states
          .map((s) => {
            const cls = s.in_isr ? "rs" : "rs out";
            const l = s.lag === null || s.lag === undefined ? DASH : esc(s.lag);
            let title = `broker ${s.broker_id}: LEO ${s.log_end_offset ?? DASH}${s.in_isr ? ", in ISR" : ", NOT in ISR"}`;
            let caught = ago(s.last_caught_up_ms_ago);
            if (typeof s.last_caught_up_ms_ago === "number" && s.last_caught_up_ms_ago < 0) {
              // -1: not seen caught up by this leader; whether it was under the one before
              // only that one knew (it may well have been in the ISR a moment ago).
              caught = "unknown since leader change";
              title += `; broker ${r.leader} has not seen it caught up since it became the leader, and the previous leader's record is not carried over`;
            }
            return `<span class="${cls}" data-replica="${esc(s.broker_id)}" title="${esc(title)}">b${esc(s.broker_id)}: lag ${l}, ${caught}</span>`;
          })
          .join(" ");
      }

      const minIsr = r.min_insync_replicas;
      const minCls = minIsr !== null && minIsr !== undefined && isr.length < minIsr ? " bad" : "";
      // The row says what its writes wait on, beside its status.
      const waits = [...stalled].sort((a, b) => a - b);
      const moveBadge =
        adding.size || removing.size
          ? ` <span class="badge moving" title="a reassignment is moving this partition: adding ${esc([...adding].join(",") || "none")}, removing ${esc([...removing].join(",") || "none")}">moving</span>`
          : "";
      const waitBadge = waits.length
        ? ` <span class="badge waiting" title="${esc(waits.map((id) => stallTitle(id, id === r.leader)).join("; "))}">acks=all writes wait on ${esc(brokersText(waits))}</span>`
        : "";
      const rowTitle =
        r.source === "metadata"
          ? ' title="from the metadata cache: the leader did not answer, offsets unknown"'
          : "";
      out.push(
        `<tr data-tp="${esc(tp)}" data-status="${status}" data-adding="${esc([...adding].join(","))}" data-removing="${esc([...removing].join(","))}" data-waiting-on="${esc(waits.join(","))}" class="st-${status}${r.internal ? " internal" : ""}${waits.length ? " waiting" : ""}"${rowTitle}>` +
          `<td class="tp">${esc(tp)}</td>` +
          `<td class="status">${STATUS_TEXT[status]}${moveBadge}${waitBadge}</td>` +
          `<td class="leader">${leader}</td>` +
          `<td class="epoch">${val(r.leader_epoch)}</td>` +
          `<td class="replicas">${replicas}</td>` +
          `<td class="isr" data-isr="${esc(isr.join(","))}">${isrChips}</td>` +
          `<td class="min-isr num${minCls}">${val(minIsr)}</td>` +
          `<td class="hw num">${val(r.high_watermark)}</td>` +
          `<td class="leo num">${val(r.log_end_offset)}</td>` +
          `<td class="lag">${lag}</td>` +
          `</tr>`,
      );
    }
    if (!rows.length) {
      out.push(`<tr class="empty"><td colspan="10">${topicFilter ? "no partitions of this topic" : p.hidden_internal ? "no partitions of your topics (internal topics hidden)" : "no partitions"}</td></tr>`);
    }
    const html = out.join("");
    if (html !== partitionsHtml) {
      $("#partitions tbody").innerHTML = html;
      partitionsHtml = html;
    }
    const total = p.total ?? rows.length;
    const count = $("#partition-count");
    count.textContent =
      `showing ${rows.length} of ${total} partitions (your topics first, worst first)` +
      (p.hidden_internal ? `; ${p.hidden_internal} of internal topics hidden` : "");
    count.title = rows.length < total ? `add ?limit=${total} to the address to see them all` : "";
  }

  // --- events ----------------------------------------------------------------------------
  //
  // One failure is many events: a broker's death is an ISR shrink in every partition it had
  // and an election in every one it led. Partition events of one kind about one broker
  // (events.py names it in `broker`), each within GROUP_GAP_MS of the one before, are one
  // line that opens on its members. Internal topics' events follow the internal toggle.

  const sevOf = (e) => (["ok", "info", "warning", "error"].includes(e.severity) ? e.severity : "info");
  const isUnclean = (e) => e.kind === "leader_election" && !!e.details && e.details.clean === false;

  function eventHtml(e) {
    const sev = sevOf(e);
    const unclean = isUnclean(e);
    const d = new Date(e.time_ms);
    let title = `${d.toLocaleString()} · ${e.kind}`;
    if (e.details) title += " " + JSON.stringify(e.details);
    const broker = e.broker === undefined ? "" : ` data-broker="${esc(e.broker)}"`;
    return (
      `<li data-kind="${esc(e.kind)}" data-seq="${esc(e.seq)}"${broker} class="sev-${sev}${unclean ? " unclean" : ""}" title="${esc(title)}">` +
      `<time>${clock(e.time_ms)}</time>` +
      (unclean ? '<span class="badge unclean">unclean</span>' : "") +
      `<span class="ev-text">${esc(e.text)}</span>` +
      `</li>`
    );
  }

  // The brokers a partition event is about (null: not a partition event, never grouped).
  function aboutOf(e) {
    if (typeof e.partition !== "number") return null;
    const d = e.details || {};
    if (e.kind === "isr_shrink") return d.removed || [];
    if (e.kind === "isr_expand") return d.added || [];
    return e.broker === undefined ? [] : [e.broker];
  }

  // An election is about the leader it deposed, or the one that took over (see events.py).
  const deposed = (e) => !!e.details && e.broker === e.details.old_leader;

  function groupKey(e) {
    const about = aboutOf(e);
    if (about === null) return null;
    return [e.kind, about.join(","), sevOf(e), e.kind === "leader_election" ? deposed(e) : ""].join("|");
  }

  // Lines newest first (by when each began); a line is one event or a group of them.
  function groupEvents() {
    const lines = [];
    const last = new Map(); // key → its latest group
    for (const e of [...events.values()].sort((a, b) => a.seq - b.seq)) {
      const key = groupKey(e);
      const g = key === null ? undefined : last.get(key);
      if (g !== undefined && e.time_ms - g.members[g.members.length - 1].time_ms <= GROUP_GAP_MS) {
        g.members.push(e);
      } else {
        const line = { id: e.seq, members: [e] };
        lines.push(line);
        if (key !== null) last.set(key, line);
      }
    }
    return lines.reverse();
  }

  const brokersText = (ids) => (ids.length === 1 ? `broker ${ids[0]}` : `brokers ${ids.join(", ")}`);

  function groupText(g, atLeast) {
    const e = g.members[0];
    const d = e.details || {};
    const n = `${atLeast ? "at least " : ""}${g.members.length} partitions`;
    let text;
    if (e.kind === "isr_shrink") text = `${brokersText(d.removed || [])} left the ISR of ${n}`;
    else if (e.kind === "isr_expand") text = `${brokersText(d.added || [])} joined the ISR of ${n}`;
    else if (e.kind === "leader_election") {
      const how = isUnclean(e) ? "in unclean elections: the new leaders were not in the ISR" : "in clean elections";
      text = deposed(e)
        ? `broker ${e.broker} lost the leadership of ${n} ${how}`
        : `broker ${e.broker} became the leader of ${n} ${how}`;
    } else if (e.kind === "partition_offline") text = `${n} led by broker ${e.broker} went offline (no leader)`;
    else text = `${n}: ${e.kind}`;
    // How many are the user's, how many each internal topic's.
    let user = 0;
    const internal = new Map();
    for (const m of g.members) {
      if (isInternal(m.topic)) internal.set(m.topic, (internal.get(m.topic) || 0) + 1);
      else user += 1;
    }
    if (internal.size) {
      const theirs = [...internal].map(([t, k]) => `${k} of ${t}`).join(", ");
      if (showInternal) text += ` (${user ? `${user} of your topics', ` : ""}${theirs})`;
      else text += ` (${user ? `${user} of your topics'; ` : ""}${theirs}, hidden)`;
    }
    return text;
  }

  function groupHtml(g, visible, atLeast) {
    const first = g.members[0];
    const newest = g.members[g.members.length - 1];
    const sev = sevOf(first);
    const unclean = isUnclean(first);
    const open = openGroups.has(g.id);
    const hidden = g.members.length - visible.length;
    const title = `${new Date(first.time_ms).toLocaleString()} to ${clock(newest.time_ms)} · ${g.members.length} × ${first.kind}; click to list them`;
    // Members are listed only while open: a group can have thousands.
    let members = "";
    if (open) {
      members = visible.slice().reverse().map(eventHtml).join("");
      if (hidden) members += `<li class="hidden-note muted">${hidden} of internal topics hidden</li>`;
    }
    return (
      `<li data-kind="${esc(first.kind)}" data-seq="${esc(first.seq)}" data-group="${esc(g.id)}" data-count="${g.members.length}" data-broker="${esc(aboutOf(first).join(","))}" class="group sev-${sev}${unclean ? " unclean" : ""}" title="${esc(title)}">` +
      `<time>${clock(first.time_ms)}</time>` +
      (unclean ? '<span class="badge unclean">unclean</span>' : "") +
      `<details class="ev-text"${open ? " open" : ""}><summary>${esc(groupText(g, atLeast))}</summary>` +
      `<ol class="members">${members}</ol></details>` +
      `</li>`
    );
  }

  function renderEvents() {
    // The page may not have a group's start: the serving broker sends the latest events
    // when it opens, and keeps MAX_EVENTS.
    let oldest = Infinity;
    for (const seq of events.keys()) if (seq < oldest) oldest = seq;
    let lines = 0;
    let hidden = 0;
    const out = [];
    for (const g of groupEvents()) {
      const visible = showInternal ? g.members : g.members.filter((m) => !isInternal(m.topic));
      hidden += g.members.length - visible.length;
      if (!visible.length) continue;
      lines += 1;
      if (g.members.length === 1) out.push(eventHtml(g.members[0]));
      else out.push(groupHtml(g, visible, g.id === oldest && oldest > 1));
    }
    const html = out.join("");
    if (html !== eventsHtml) {
      $("#events").innerHTML = html;
      eventsHtml = html;
    }
    $("#events-empty").hidden = lines > 0;
    $("#events-empty").textContent = hidden ? "no events of your topics yet" : "no events yet";
    const count = $("#event-count");
    count.textContent = events.size
      ? `${events.size} in ${lines} line${lines === 1 ? "" : "s"}` + (hidden ? ` (${hidden} internal hidden)` : "")
      : "";
  }

  function addEvents(list) {
    let fresh = 0;
    for (const e of list) {
      if (typeof e.seq !== "number" || events.has(e.seq)) continue;
      events.set(e.seq, e);
      shownMax = Math.max(shownMax, e.seq);
      fresh += 1;
    }
    if (events.size > MAX_EVENTS) {
      const seqs = [...events.keys()].sort((a, b) => a - b);
      for (const s of seqs.slice(0, events.size - MAX_EVENTS)) events.delete(s);
    }
    if (fresh || !eventsHtml) renderEvents();
  }

  function onGroupToggle(ev) {
    const det = ev.target;
    if (!(det instanceof HTMLDetailsElement)) return;
    const id = Number(det.closest("li").dataset.group);
    if (det.open) openGroups.add(id);
    else openGroups.delete(id);
    renderEvents();
  }

  function onSeverityToggle(ev) {
    const box = ev.target;
    if (!box.dataset || !box.dataset.sev) return;
    $("#events").classList.toggle("hide-" + box.dataset.sev, !box.checked);
  }

  // --- throughput ------------------------------------------------------------------------

  function blank() {
    return new Array(thr.win).fill(null);
  }

  function allArrays() {
    const out = Object.values(thr.total);
    for (const rates of thr.topics.values()) out.push(...Object.values(rates));
    return out;
  }

  function ingestThroughput(t, topics) {
    if (!t || typeof t.end_s !== "number") return;
    if (thr.endS === null) {
      thr.win = t.window_s || 300;
      thr.endS = t.end_s;
    }
    if (t.end_s > thr.endS) {
      const d = t.end_s - thr.endS;
      for (const arr of allArrays()) {
        if (d >= thr.win) {
          arr.fill(null);
        } else {
          arr.splice(0, d);
          for (let i = 0; i < d; i += 1) arr.push(null);
        }
      }
      thr.endS = t.end_s;
    }
    const first = thr.endS - thr.win + 1;
    const put = (store, series) => {
      for (const [rate, values] of Object.entries(series || {})) {
        if (!Array.isArray(values)) continue;
        if (!store[rate]) store[rate] = blank();
        const arr = store[rate];
        for (let i = 0; i < values.length; i += 1) {
          const idx = t.start_s + i - first;
          if (idx >= 0 && idx < thr.win) arr[idx] = values[i];
        }
      }
    };
    put(thr.total, t.total);
    for (const [topic, series] of Object.entries(t.topics || {})) {
      if (!thr.topics.has(topic)) thr.topics.set(topic, {});
      put(thr.topics.get(topic), series);
    }
    // forget deleted topics once their data has left the window
    const known = new Set(topics);
    for (const [topic, rates] of thr.topics) {
      if (known.has(topic)) continue;
      if (Object.values(rates).every((arr) => arr.every((v) => v === null))) thr.topics.delete(topic);
    }
  }

  const charts = new Map(); // key → chart parts
  const topicBlocks = new Map(); // topic → element
  let topicBlocksKey = null;

  function makeChart(topic, rate) {
    const root = document.createElement("div");
    root.className = "chart";
    const label = document.createElement("div");
    label.className = "chart-label";
    const name = document.createElement("span");
    name.className = "chart-name";
    name.textContent = RATE_LABEL[rate] || rate;
    const value = document.createElement("span");
    value.className = "chart-value";
    const max = document.createElement("span");
    max.className = "chart-max";
    label.append(name, value, max);
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("data-topic", topic);
    svg.setAttribute("data-rate", rate);
    svg.setAttribute("width", String(W));
    svg.setAttribute("height", String(H));
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    svg.classList.add("spark", rate === "messages_in" ? "msgs" : rate.startsWith("replication") ? "repl" : "bytes");
    const base = document.createElementNS(SVG_NS, "line");
    base.setAttribute("class", "base");
    base.setAttribute("x1", "0");
    base.setAttribute("x2", String(W));
    base.setAttribute("y1", String(H - 1));
    base.setAttribute("y2", String(H - 1));
    const area = document.createElementNS(SVG_NS, "path");
    area.setAttribute("class", "area");
    const line = document.createElementNS(SVG_NS, "path");
    line.setAttribute("class", "line");
    const title = document.createElementNS(SVG_NS, "title");
    svg.append(base, area, line, title);
    root.append(label, svg);
    return { root, value, max, area, line, title, rate };
  }

  function drawChart(c, arr) {
    const n = arr.length;
    let max = 0;
    let any = false;
    for (const v of arr) {
      if (v !== null && v !== undefined) {
        any = true;
        if (v > max) max = v;
      }
    }
    let latest = null;
    for (let i = n - 1; i >= Math.max(0, n - 5); i -= 1) {
      if (arr[i] !== null && arr[i] !== undefined) {
        latest = arr[i];
        break;
      }
    }
    const top = 4;
    const bottom = H - 1.5;
    const x = (i) => (n > 1 ? (i * (W - 2)) / (n - 1) + 1 : W / 2).toFixed(1);
    const y = (v) => (max > 0 ? bottom - (v / max) * (bottom - top) : bottom).toFixed(1);
    let line = "";
    let area = "";
    let segStart = -1;
    const closeSeg = (end) => {
      if (segStart < 0) return;
      if (end === segStart) line += " h0.5";
      area += ` L${x(end)} ${bottom} L${x(segStart)} ${bottom} Z`;
      segStart = -1;
    };
    for (let i = 0; i < n; i += 1) {
      const v = arr[i];
      if (v === null || v === undefined) {
        closeSeg(i - 1);
        continue;
      }
      const pt = `${x(i)} ${y(v)}`;
      if (segStart < 0) {
        segStart = i;
        line += ` M${pt}`;
        area += ` M${pt}`;
      } else {
        line += ` L${pt}`;
        area += ` L${pt}`;
      }
    }
    closeSeg(n - 1);
    c.line.setAttribute("d", line.trim() || "M0 0");
    c.area.setAttribute("d", area.trim() || "M0 0");
    c.value.textContent = fmtRate(c.rate, latest);
    c.max.textContent = any ? `max ${fmtRate(c.rate, max)}` : "no data";
    c.title.textContent = `${RATE_LABEL[c.rate] || c.rate}: now ${fmtRate(c.rate, latest)}, max ${any ? fmtRate(c.rate, max) : DASH} (last ${n} s)`;
  }

  function chartFor(topic, rate, parent) {
    const key = topic + "\u0000" + rate;
    let c = charts.get(key);
    if (!c) {
      c = makeChart(topic, rate);
      charts.set(key, c);
      parent.appendChild(c.root);
    }
    return c;
  }

  function renderThroughput() {
    if (!thr || thr.endS === null) return;
    const totalGrid = $("#throughput-total");
    for (const rate of TOTAL_RATES) {
      const c = chartFor("_total", rate, totalGrid);
      drawChart(c, thr.total[rate] || blank());
    }
    const wanted = [...thr.topics.keys()]
      .filter((t) => (topicFilter ? t === topicFilter : showInternal || !isInternal(t)))
      .sort(userFirst);
    const key = wanted.join("\u0000");
    const holder = $("#throughput-topics");
    if (key !== topicBlocksKey) {
      topicBlocksKey = key;
      for (const [topic, el] of topicBlocks) {
        if (!wanted.includes(topic)) {
          el.remove();
          topicBlocks.delete(topic);
          for (const rate of TOPIC_RATES) charts.delete(topic + "\u0000" + rate);
        }
      }
      for (const topic of wanted) {
        let el = topicBlocks.get(topic);
        if (!el) {
          el = document.createElement("div");
          el.className = "topic-charts";
          el.dataset.topic = topic;
          const h = document.createElement("div");
          h.className = "topic-name";
          h.textContent = topic;
          const grid = document.createElement("div");
          grid.className = "chart-pair";
          el.append(h, grid);
          topicBlocks.set(topic, el);
        }
        holder.appendChild(el); // keeps them sorted
      }
      if (!wanted.length) {
        holder.innerHTML = `<p class="muted">no per-topic data${topicFilter ? " for this topic" : ""} yet</p>`;
      } else {
        const stray = holder.querySelector("p.muted");
        if (stray) stray.remove();
      }
    }
    for (const topic of wanted) {
      const grid = topicBlocks.get(topic).querySelector(".chart-pair");
      const rates = thr.topics.get(topic);
      for (const rate of TOPIC_RATES) drawChart(chartFor(topic, rate, grid), rates[rate] || blank());
    }
    $("#throughput-window").textContent = `last ${Math.round(thr.win / 60)} minutes, per second, up to ${clock(thr.endS * 1000, false)}`;
  }

  // --- start -----------------------------------------------------------------------------

  function start() {
    $("#topic-filter").addEventListener("change", onFilterChange);
    $("#show-internal").checked = showInternal;
    $("#show-internal").addEventListener("change", onInternalToggle);
    $("#event-filters").addEventListener("change", onSeverityToggle);
    // `toggle` does not bubble: caught on its way down.
    $("#events").addEventListener("toggle", onGroupToggle, true);
    renderTopics([]);
    setInterval(renderUpdated, 1000);
    connect();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
