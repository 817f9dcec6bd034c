#!/usr/bin/env python3
"""Build OUT/table.md from OUT/results.tsv and OUT/raw/ logs (run.sh's);
run by `cargo xtask ltp`. Usage: table.py OUT"""
import csv, re, os, sys
OUT = sys.argv[1]
rows = list(csv.DictReader(open(f'{OUT}/results.tsv'), delimiter='\t'))
R = {}
order = []
for r in rows:
    if r['test'] not in R:
        order.append(r['test']); R[r['test']] = {}
    R[r['test']][r['mode']] = r

def n(r, summ, line):
    v = r[summ]
    s = int(v) if v != '-' else 0
    return max(s, int(r[line]))

def status(r):
    if r['timed_out'] == 'yes': return 'TIMEOUT'
    f, b = n(r, 'failed', 'TFAIL'), n(r, 'broken', 'TBROK')
    p, c, w = n(r, 'passed', 'TPASS'), n(r, 'skipped', 'TCONF'), n(r, 'warnings', 'TWARN')
    if f: return 'FAIL'
    if b: return 'BROK'
    if w: return 'WARN'
    if p: return 'PASS'
    if c: return 'CONF'
    return f'rc={r["exit"]}'

def counts(r):
    return (f'rc={r["exit"]} p={n(r,"passed","TPASS")} f={n(r,"failed","TFAIL")} '
            f'b={n(r,"broken","TBROK")} s={n(r,"skipped","TCONF")} w={n(r,"warnings","TWARN")}')

BAD = re.compile(r'(^|[^A-Z])(TFAIL|TBROK)([^A-Z]|$)')
def badlines(test, mode, k=3):
    p = f'{OUT}/raw/{test}.{mode}.log'
    out = []
    for l in open(p, errors='replace'):
        if BAD.search(l):
            out.append(l.rstrip())
            if len(out) == k: break
    return out

def norm(lines, mode):
    return [re.sub(r'/scratch/\w+/', '/scratch/MODE/', re.sub(r'interpose-\d+-[0-9a-f]+', 'interpose-S', re.sub(r'LTP_\w{9}', 'LTP_X', l))) for l in lines]

modes = ['full', 'fast']
total = len(order)
nat = {t: status(R[t]['native']) for t in order}
npass = [t for t in order if nat[t] == 'PASS']
summary = {}
for m in modes:
    st = {t: status(R[t][m]) for t in npass}
    summary[m] = {
        'FAIL': sorted(t for t in npass if st[t] == 'FAIL'),
        'BROK': sorted(t for t in npass if st[t] == 'BROK'),
        'other': sorted(f'{t} ({st[t]})' for t in npass if st[t] not in ('PASS', 'FAIL', 'BROK')),
        'fewer': sorted(t for t in npass if st[t] == 'PASS' and n(R[t][m],'passed','TPASS') != n(R[t]['native'],'passed','TPASS')),
    }

diff = []
for t in order:
    a = R[t]['native']
    if any(status(R[t][m]) != nat[t] or R[t][m]['exit'] != a['exit']
           or n(R[t][m],'passed','TPASS') != n(a,'passed','TPASS') for m in modes):
        diff.append(t)

L = []
L.append('# LTP path-syscall tests: native vs interpose (full) vs interpose --fast\n')
import platform, subprocess
src = os.environ.get('SRC', '')
rev = subprocess.run(['git', '-C', src, 'describe', '--always'], capture_output=True, text=True).stdout.strip() if src else ''
L.append(f'LTP {rev or "(unknown revision)"}, kernel {platform.release()}, one test at a time, {os.environ.get("TIMEOUT", "60")} s timeout.')
L.append('Status: FAIL = any TFAIL; BROK = any TBROK (no TFAIL); WARN = TWARN only; PASS = TPASS and nothing worse; CONF = only TCONF.')
L.append('Counts are max(LTP summary, counted lines); legacy (old-API) tests print no summary.\n')
L.append('## Summary\n')
L.append(f'- tests run: {total} (each in 3 modes)')
st_n = {}
for t in order: st_n[nat[t]] = st_n.get(nat[t], 0) + 1
L.append(f'- native status: ' + ', '.join(f'{k} {v}' for k, v in sorted(st_n.items())))
L.append(f'- pass natively: {len(npass)}')
for m in modes:
    s = summary[m]
    lab = 'full (`interpose run`)' if m == 'full' else '`interpose run --fast`'
    L.append(f'- of those, under {lab}: FAIL {len(s["FAIL"])}, BROK {len(s["BROK"])}, '
             f'FAIL or BROK {len(s["FAIL"]) + len(s["BROK"])}, other non-pass {len(s["other"])}'
             + (f' ({", ".join(s["other"])})' if s['other'] else '')
             + (f'; still PASS but different TPASS count: {", ".join(s["fewer"])}' if s['fewer'] else ''))
    L.append(f'  - FAIL: {" ".join(s["FAIL"]) or "-"}')
    L.append(f'  - BROK: {" ".join(s["BROK"]) or "-"}')
only = lambda a, b: sorted(set(summary[a]['FAIL'] + summary[a]['BROK']) - set(summary[b]['FAIL'] + summary[b]['BROK']))
L.append(f'- non-pass under full only: {" ".join(only("full","fast")) or "-"}')
L.append(f'- non-pass under --fast only: {" ".join(only("fast","full")) or "-"}')
DEV = 'Failed to acquire device'
def isdev(t, m): return DEV in open(f'{OUT}/raw/{t}.{m}.log', errors='replace').read()
for m in modes:
    bad = summary[m]['FAIL'] + summary[m]['BROK']
    d = [t for t in bad if isdev(t, m)]
    o = sorted(t for t in bad if not isdev(t, m))
    L.append(f'- {m}: of the {len(bad)} native-pass tests that FAIL/BROK, {len(d)} stop at LTP device setup '
             f'(`TBROK: Failed to acquire device`; the preceding TINFO says opening /dev/loop-control gave EACCES); '
             f'the other {len(o)}: {" ".join(o)}')
if all('caps' in R[t] for t in order):
    # Natively with only the sandbox's capabilities: a test that fails
    # there too needs a capability interpose drops, not a fixed answer.
    for m in modes:
        bad = summary[m]['FAIL'] + summary[m]['BROK']
        capless = sorted(t for t in bad if not isdev(t, m) and status(R[t]['caps']) in ('FAIL', 'BROK'))
        rest = sorted(t for t in bad if not isdev(t, m) and t not in capless)
        L.append(f'- {m}: of the others, {len(capless)} fail natively too with only the sandbox\'s capabilities '
                 f'(a capability it drops): {" ".join(capless) or "-"}; left: {len(rest)}: {" ".join(rest) or "-"}')
L.append(f'- rows below (any difference in status, exit code or pass count vs native): {len(diff)}\n')

L.append('## Differing tests\n')
L.append('Non-device rows first, then the rows that stop at device setup.\n')
L.append('| test | native | full | fast | first TFAIL/TBROK lines (full; fast if different) |')
L.append('|---|---|---|---|---|')
def esc(s): return s.replace('|', '\\|')
diff.sort(key=lambda t: (any(isdev(t, m) for m in modes), t))
for t in diff:
    cells = [f'**{status(R[t][m])}** {counts(R[t][m])}' for m in ['native'] + modes]
    fl = badlines(t, 'full'); sl = badlines(t, 'fast')
    txt = '<br>'.join(f'`{esc(l)}`' for l in fl) or '—'
    if norm(sl, 'fast') != norm(fl, 'full'):
        txt += '<br>**fast:** ' + ('<br>'.join(f'`{esc(l)}`' for l in sl) or '—')
    else:
        txt += '<br>(fast: same)' if fl else ''
    L.append(f'| {t} | ' + ' | '.join(cells) + f' | {txt} |')

L.append('\n## Tests not passing natively (not counted as divergences)\n')
for t in order:
    if nat[t] != 'PASS':
        L.append(f'- {t}: {nat[t]} {counts(R[t]["native"])}; ' +
                 '; '.join(f'{m}: {status(R[t][m])}' for m in modes))
open(f'{OUT}/table.md', 'w').write('\n'.join(L) + '\n')
print('\n'.join(L[:25]))
