// How the live board's page writes a length of time: coord.times.duration_text's rule,
// ported (the CLI, `coord watch` and the page spell "45s", "4m03s", "1h30m", "6d23h" alike;
// tests/test_web_times.py holds the two to one table). Fractions are cut, not rounded, and a
// negative length is none.
"use strict";

(() => {
  function durationText(seconds) {
    const whole = Math.max(0, Math.trunc(Number(seconds) || 0));
    const two = (n) => String(n).padStart(2, "0");
    if (whole < 60) return `${whole}s`;
    if (whole < 3600) return `${Math.floor(whole / 60)}m${two(whole % 60)}s`;
    if (whole < 86400) return `${Math.floor(whole / 3600)}h${two(Math.floor((whole % 3600) / 60))}m`;
    return `${Math.floor(whole / 86400)}d${two(Math.floor((whole % 86400) / 3600))}h`;
  }

  globalThis.coordTimes = { durationText };
})();
