var packed = null;
function unpack() {
  if (!packed) {
    var text = atob(document.getElementById('packed-code').textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; ++i) bytes[i] = text.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
    packed = new Response(stream).text().then(function (t) { return t.split('\x01'); });
  }
  return packed;
}
function fill(d) {
  if (d.dataset.code === undefined || d.dataset.filled) return Promise.resolve();
  return unpack().then(function (codes) {
    d.querySelector('pre code').innerHTML = codes[Number(d.dataset.code)];
    d.dataset.filled = '1';
  });
}
function setCode(open) {
  var all = [];
  document.querySelectorAll('details.code').forEach(function (d) {
    if (!open) { d.open = false; return; }
    all.push(fill(d).then(function () { d.open = true; }));
  });
  return Promise.all(all).then(function () { document.body.dataset.codeOpen = open ? '1' : ''; });
}
document.querySelectorAll('details.code[data-code]').forEach(function (d) {
  d.addEventListener('toggle', function () { if (d.open) fill(d); });
});
document.getElementById('open-code').addEventListener('click', function () { setCode(true); });
document.getElementById('close-code').addEventListener('click', function () { setCode(false); });
if (location.hash === '#open-all-code') setCode(true);
