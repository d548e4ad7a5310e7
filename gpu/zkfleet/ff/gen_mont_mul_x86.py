#!/usr/bin/env python3
"""Prints the bodies of mont_mul_x86.hpp (x86-64 mulx/adcx/adox Montgomery
multiplication for 4 and 6 limbs). Usage: paste the output between the
header's namespace lines, or regenerate the file as described there."""
def gen(N):
    R = [f"%[r{k}]" for k in range(N + 1)]
    lines = []
    def e(s): lines.append(s)
    for k in range(N + 1):
        e(f"xorl %k[r{k}], %k[r{k}]")  # zero the accumulators
    for i in range(N):
        T = [R[(i + j) % (N + 1)] for j in range(N + 1)]
        e(f"movq {8*i}(%[b]), %%rdx")
        e("xorl %k[lo], %k[lo]")            # CF = OF = 0
        for j in range(N):
            e(f"mulxq {8*j}(%[a]), %[lo], %[hi]")
            e(f"adcxq %[lo], {T[j]}")
            e(f"adoxq %[hi], {T[j+1]}")
        e("movl $0, %k[lo]")
        e(f"adcxq %[lo], {T[N]}")
        e(f"movq {T[0]}, %%rdx")
        e("imulq %[inv], %%rdx")
        e("xorl %k[lo], %k[lo]")
        for j in range(N):
            e(f"mulxq {8*j}(%[p]), %[lo], %[hi]")
            e(f"adcxq %[lo], {T[j]}")
            e(f"adoxq %[hi], {T[j+1]}")
        e("movl $0, %k[lo]")
        e(f"adcxq %[lo], {T[N]}")
    final = [(N + j) % (N + 1) for j in range(N)]
    return lines, final

for N in (4, 6):
    lines, final = gen(N)
    print(f"// ---- {N} limbs: {len(lines)} instructions; result in r{', r'.join(map(str, final))}")
    print(f"inline void mont_mul_adx_{N}(const uint64_t* a, const uint64_t* b, const uint64_t* p, uint64_t inv,")
    print(f"                            uint64_t* out) {{")
    print("  uint64_t " + ", ".join(f"r{k}" for k in range(N + 1)) + ", lo, hi;")
    print("  asm(")
    for l in lines:
        print(f'      "{l}\\n\\t"')
    outs = ", ".join(f'[r{k}] "=&r"(r{k})' for k in range(N + 1))
    print(f'      : {outs}, [lo] "=&r"(lo), [hi] "=&r"(hi)')
    print(f'      : [a] "r"(a), [b] "r"(b), [p] "r"(p), [inv] "m"(inv),')
    print(f'        "m"(*reinterpret_cast<const uint64_t(*)[{N}]>(a)), "m"(*reinterpret_cast<const uint64_t(*)[{N}]>(b)),')
    print(f'        "m"(*reinterpret_cast<const uint64_t(*)[{N}]>(p))')
    print('      : "rdx", "cc");')
    for j, k in enumerate(final):
        print(f"  out[{j}] = r{k};")
    print("}")
    print()
