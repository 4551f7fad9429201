// How the live board's page tells its daemon from a stranger on its port (the reasoning:
// coord.server.web.access). HMAC-SHA256 (RFC 2104 over FIPS 180-4) by hand rather than
// crypto.subtle, which browsers give only to secure contexts: a daemon bound to a
// non-loopback address on purpose serves its page over plain http, and the page must prove
// it all the same. One proof per (re)connection: speed does not matter here.
"use strict";

(() => {
  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ]);
  const H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
  const BLOCK = 64;

  const ror = (x, n) => (x >>> n) | (x << (32 - n));

  function sha256(bytes) {
    const length = bytes.length;
    const padded = new Uint8Array(Math.ceil((length + 9) / BLOCK) * BLOCK);
    padded.set(bytes);
    padded[length] = 0x80;
    const view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, Math.floor(length / 0x20000000)); // bit length, high
    view.setUint32(padded.length - 4, (length * 8) >>> 0); // and low
    const h = Uint32Array.from(H0);
    const w = new Uint32Array(64);
    for (let at = 0; at < padded.length; at += BLOCK) {
      for (let i = 0; i < 16; i++) w[i] = view.getUint32(at + i * 4);
      for (let i = 16; i < 64; i++) {
        const s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >>> 3);
        const s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >>> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
      }
      let [a, b, c, d, e, f, g, k] = h;
      for (let i = 0; i < 64; i++) {
        const t1 = (k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
        const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
        k = g;
        g = f;
        f = e;
        e = (d + t1) >>> 0;
        d = c;
        c = b;
        b = a;
        a = (t1 + t2) >>> 0;
      }
      h[0] += a;
      h[1] += b;
      h[2] += c;
      h[3] += d;
      h[4] += e;
      h[5] += f;
      h[6] += g;
      h[7] += k;
    }
    const out = new Uint8Array(32);
    const outView = new DataView(out.buffer);
    h.forEach((word, i) => outView.setUint32(i * 4, word));
    return out;
  }

  function hmacSha256(key, message) {
    const k = key.length > BLOCK ? sha256(key) : key;
    const block = new Uint8Array(BLOCK);
    block.set(k);
    const inner = new Uint8Array(BLOCK + message.length);
    const outer = new Uint8Array(BLOCK + 32);
    for (let i = 0; i < BLOCK; i++) {
      inner[i] = block[i] ^ 0x36;
      outer[i] = block[i] ^ 0x5c;
    }
    inner.set(message, BLOCK);
    outer.set(sha256(inner), BLOCK);
    return sha256(outer);
  }

  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

  function unbase64url(text) {
    const plain = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(plain, (ch) => ch.charCodeAt(0));
  }

  // what this page's daemon answers to nonce: HMAC keyed by the session's signature (the part
  // after the dot) over "coord page identity v1" LF nonce
  function expectedProof(session, nonce) {
    const signature = unbase64url(session.slice(session.indexOf(".") + 1));
    return hex(hmacSha256(signature, new TextEncoder().encode(`coord page identity v1\n${nonce}`)));
  }

  function newNonce() {
    return hex(crypto.getRandomValues(new Uint8Array(16)));
  }

  globalThis.coordProof = { sha256, hmacSha256, hex, expectedProof, newNonce };
})();
