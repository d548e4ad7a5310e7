#!/usr/bin/env python3
"""Sums an Nsight Compute per-kernel summary (ncu --metrics gpu__time_duration.sum
--print-summary per-kernel, as bench/gpu/bellman_profile.sh NCU=1 writes it) by
kernel name: the total device time of each kernel, its launches, and the
largest single launches. The point-check kernels of a key's load are left out
of the totals.

    bench/gpu/ncu_summary.py ncu.txt
"""
import re,sys
txt=open(sys.argv[1]).read().splitlines()
rows=[];name=None;inv=None
for i,l in enumerate(txt):
    m=re.match(r'^  (\S.*?)\s+\((\d+), \d+, \d+\)x\((\d+), \d+, \d+\).*Invocations (\d+)',l)
    if m: name=m.group(1)+' g%s'%m.group(2); inv=int(m.group(4))
    if 'gpu__time_duration.sum' in l and name:
        parts=l.split()
        unit=parts[1]; mn,mx,avg=map(lambda s: float(s.replace(',','')),parts[2:5])
        f={'ns':1e-6,'us':1e-3,'ms':1,'s':1e3}[unit]
        short=name.split('void ')[1].split('(')[0] if 'void ' in name else name.split('(')[0]
        rows.append((avg*f*inv,inv,avg*f,short+' '+name.split()[-1]))
agg={}
for r in rows:
    k=r[3].rsplit(' ',1)[0]
    if 'FindBad' in k: continue
    a=agg.setdefault(k,[0,0]); a[0]+=r[0]; a[1]+=r[1]
print('total ms (no point check)',round(sum(v[0] for v in agg.values()),1))
for k,v in sorted(agg.items(),key=lambda x:-x[1][0])[:22]: print('%8.2f ms %4d  %s'%(v[0],v[1],k[:110]))
print()
for r in sorted(rows,reverse=True)[:30]:
  if 'FindBad' not in r[3]: print('%8.2f ms %4d x %8.3f  %s'%(r[0],r[1],r[2],r[3][:120]))
