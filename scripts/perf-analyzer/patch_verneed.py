"""Points perf_analyzer's version needs on glibc 2.38 / GLIBCXX 3.4.31-32 at versions Debian 12 has."""
import struct, sys

def elf_hash(name):
    h = 0
    for c in name.encode():
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h

REPLACE = {"GLIBC_2.38": "GLIBC_2.2.5", "GLIBCXX_3.4.31": "GLIBCXX_3.4", "GLIBCXX_3.4.32": "GLIBCXX_3.4"}
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
shoff, = struct.unpack_from("<Q", b, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
SHT_GNU_verneed = 0x6FFFFFFE
for s in secs:
    if s[1] != SHT_GNU_verneed:
        continue
    strtab = secs[s[6]][4]  # sh_link -> .dynstr offset
    cstr = lambda off: b[strtab + off: b.index(0, strtab + off)].decode()
    find = lambda name: b.index(b"\0" + name.encode() + b"\0", strtab) + 1 - strtab
    off = s[4]
    while True:
        vn_version, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", b, off)
        aux = off + vn_aux
        for _ in range(vn_cnt):
            h, flags, other, name, nxt = struct.unpack_from("<IHHII", b, aux)
            new = REPLACE.get(cstr(name))
            if new:
                struct.pack_into("<IHHI", b, aux, elf_hash(new), flags, other, find(new))
            aux += nxt
            if not nxt:
                break
        if not vn_next:
            break
        off += vn_next
open(path, "wb").write(b)
