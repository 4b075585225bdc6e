"""What an ELF64 shared object asks the dynamic loader for: the libraries of its DT_NEEDED
entries, its loader paths (DT_RPATH, DT_RUNPATH, DT_AUDIT) and the undefined symbols of its
.dynsym, read from the file through the dynamic segment, as the loader reads it. Standard library
only (the judge's Python); ELF64 little-endian (x86-64, aarch64). module_imports.py judges what
it reads.
"""

import struct

ELF_MAGIC = b"\x7fELF"
SHT_DYNSYM, SHT_DYNAMIC = 11, 6
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 0, 1, 5, 6, 10, 11
DT_RPATH, DT_RUNPATH = 15, 29
DT_AUDIT, DT_DEPAUDIT = 0x6FFFFEFC, 0x6FFFFEFB
STB_LOCAL = 0
SHN_UNDEF = 0
SYM_SIZE = 24  # Elf64_Sym
DYN_SIZE = 16  # Elf64_Dyn


class ModuleFileError(Exception):
    """The file is not an ELF64 shared object this reader can vouch for."""


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == ELF_MAGIC


class Elf64:
    """The parts of an ELF64 little-endian file the loader uses to bind imports. Every offset and
    size is checked against the file; any inconsistency is a ModuleFileError."""

    def __init__(self, data):
        self.data = data
        if len(data) < 64 or data[:4] != ELF_MAGIC:
            raise ModuleFileError("not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise ModuleFileError("not ELF64 little-endian (class %d, data %d)" % (data[4],
                                                                                 data[5]))
        (self.e_type, _, _, _, self.phoff, self.shoff, _, _, self.phentsize, self.phnum,
         self.shentsize, self.shnum, _) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        if self.e_type != 3:
            raise ModuleFileError("not a shared object (e_type %d)" % self.e_type)
        self.sections = [self.unpack("<IIQQQQIIQQ", self.shoff + k * self.shentsize,
                                     "section header %d" % k)
                         for k in range(self.shnum)] if self.shnum else []
        self.segments = [self.unpack("<IIQQQQQQ", self.phoff + k * self.phentsize,
                                     "program header %d" % k)
                         for k in range(self.phnum)]

    def unpack(self, fmt, offset, what):
        if offset < 0 or offset + struct.calcsize(fmt) > len(self.data):
            raise ModuleFileError("%s lies outside the file" % what)
        return struct.unpack_from(fmt, self.data, offset)

    def span(self, offset, size, what):
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise ModuleFileError("%s lies outside the file" % what)
        return offset, offset + size

    def file_offset(self, vaddr, what):
        """The file offset of address vaddr, through the PT_LOAD segments (as the loader maps)."""
        for p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ in self.segments:
            if p_type == PT_LOAD and p_vaddr <= vaddr < p_vaddr + p_filesz:
                return p_offset + (vaddr - p_vaddr)
        raise ModuleFileError("%s (address 0x%x) is in no loaded segment" % (what, vaddr))

    def dynamic(self):
        """[(tag, value)] of the PT_DYNAMIC segment: what the loader reads."""
        found = [s for s in self.segments if s[0] == PT_DYNAMIC]
        if len(found) != 1:
            raise ModuleFileError("%d PT_DYNAMIC segments (one expected)" % len(found))
        start, end = self.span(found[0][2], found[0][5], "the dynamic segment")
        entries = []
        for at in range(start, end - DYN_SIZE + 1, DYN_SIZE):
            tag, value = struct.unpack_from("<qQ", self.data, at)
            if tag == DT_NULL:
                return entries
            entries.append((tag, value))
        raise ModuleFileError("the dynamic segment has no DT_NULL end")

    def string(self, table_start, table_end, offset, what):
        at = table_start + offset
        if offset < 0 or at >= table_end:
            raise ModuleFileError("%s: string offset %d outside its table" % (what, offset))
        end = self.data.find(b"\0", at, table_end)
        if end < 0:
            raise ModuleFileError("%s: string without an end" % what)
        return bytes(self.data[at:end]).decode("utf-8", "replace")


def read_imports(data):
    """{"needed": [library], "symbols": [undefined symbol name], "loader": [(tag name, value)]}
    of an ELF64 shared object's bytes. The symbol table is the section the dynamic segment's
    DT_SYMTAB names (its size comes from the section header; the two must agree), so section
    headers that say something else than the loader reads are refused."""
    elf = Elf64(data)
    dyn = elf.dynamic()
    tags = {}
    for tag, value in dyn:
        tags.setdefault(tag, value)
    for tag in (DT_STRTAB, DT_SYMTAB, DT_STRSZ):
        if tag not in tags:
            raise ModuleFileError("the dynamic segment has no tag %d" % tag)
    if tags.get(DT_SYMENT, SYM_SIZE) != SYM_SIZE:
        raise ModuleFileError("symbol entries of %d bytes" % tags[DT_SYMENT])
    str_start, str_end = elf.span(elf.file_offset(tags[DT_STRTAB], "DT_STRTAB"), tags[DT_STRSZ],
                                  "the dynamic string table")
    needed, loader = [], []
    for tag, value in dyn:
        if tag == DT_NEEDED:
            needed.append(elf.string(str_start, str_end, value, "DT_NEEDED"))
        elif tag in (DT_RPATH, DT_RUNPATH, DT_AUDIT, DT_DEPAUDIT):
            name = {DT_RPATH: "DT_RPATH", DT_RUNPATH: "DT_RUNPATH", DT_AUDIT: "DT_AUDIT",
                    DT_DEPAUDIT: "DT_DEPAUDIT"}[tag]
            loader.append((name, elf.string(str_start, str_end, value, name)))
    dynsyms = [s for s in elf.sections if s[1] == SHT_DYNSYM]
    if len(dynsyms) != 1:
        raise ModuleFileError("%d .dynsym sections (one expected)" % len(dynsyms))
    _, _, _, sh_addr, sh_offset, sh_size, _, _, _, sh_entsize = dynsyms[0]
    if sh_addr != tags[DT_SYMTAB] or elf.file_offset(sh_addr, "DT_SYMTAB") != sh_offset:
        raise ModuleFileError("the .dynsym section is not the table DT_SYMTAB names")
    if sh_entsize != SYM_SIZE or sh_size % SYM_SIZE:
        raise ModuleFileError(".dynsym entries of %d bytes, %d in all" % (sh_entsize, sh_size))
    start, end = elf.span(sh_offset, sh_size, "the .dynsym section")
    symbols = []
    for at in range(start, end, SYM_SIZE):
        st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", data, at)
        if st_shndx == SHN_UNDEF and st_info >> 4 != STB_LOCAL and st_name:
            symbols.append(elf.string(str_start, str_end, st_name, ".dynsym"))
    return {"needed": needed, "symbols": symbols, "loader": loader}
