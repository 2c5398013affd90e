# doc/man/mkman.awk - the man pages of bpc's public calls, from the header
# comments of include/bpc/*.h (run by doc/man/mkman.sh; POSIX awk).
#
# A "group" is a comment followed directly (no blank line) by one or more
# function declarations: every function of the group gets a page
# (out/NAME.3) whose SYNOPSIS lists the group's prototypes, preceded by the
# full definitions of the structs and callback types they use (from any
# header), and whose DESCRIPTION is the comment. A public function without a
# comment of its own is an error (exit 1): the header comment is the
# documentation of record.
#
# Variable: out, the directory for the pages. Each page points to the guide
# of its area, doc/<header basename>.md.

function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

# roff-safe text: backslashes, and a leading dot or quote
function esc(s) {
  gsub(/\\/, "\\e", s)
  if (s ~ /^[.']/)
    s = "\\&" s
  return s
}

# prose: like esc, and `name` in italics
function prose(s,   r) {
  s = esc(s)
  r = ""
  while (match(s, /`[^`]+`/)) {
    r = r substr(s, 1, RSTART - 1) "\\fI" substr(s, RSTART + 1, RLENGTH - 2) "\\fR"
    s = substr(s, RSTART + RLENGTH)
  }
  return r s
}

function capital(s) { return toupper(substr(s, 1, 1)) substr(s, 2) }

function base(path,   b) { b = path; sub(/.*\//, "", b); return b }

function flush_comment() { com = ""; ncom = 0 }

# the comment text of a block comment, one logical line per array entry
function add_comment_line(line,   t) {
  t = line
  sub(/^[ \t]*\/\*+/, "", t)
  sub(/\*+\/[ \t]*$/, "", t)
  sub(/^[ \t]*\* ?/, "", t)
  if (ncom == 0 && trim(t) == "")
    return
  comline[++ncom] = t
}

function end_comment() {
  while (ncom > 0 && trim(comline[ncom]) == "")
    ncom--
}

function start_group() {
  ngroups++
  gcom_n[ngroups] = ncom
  for (i = 1; i <= ncom; i++)
    gcom[ngroups, i] = comline[i]
  gfile[ngroups] = FILENAME
  gnf[ngroups] = 0
}

function type_name(text,   t, n) {
  if (match(text, /\(\*[ \t]*[A-Za-z_][A-Za-z0-9_]*\)/)) {
    t = substr(text, RSTART + 2, RLENGTH - 3)
    return trim(t)
  }
  t = text
  sub(/;[ \t]*$/, "", t)
  n = split(t, w, /[^A-Za-z0-9_]+/)
  while (n > 0 && w[n] == "")
    n--
  return n > 0 ? w[n] : ""
}

BEGIN { state = 0; flush_comment(); ngroups = 0; in_group = 0; nfuncs = 0; errors = 0 }

FNR == 1 { state = 0; flush_comment(); in_group = 0 }

# inside a block comment
state == 1 {
  add_comment_line($0)
  if ($0 ~ /\*\//) {
    state = 0
    in_group = 0
    end_comment()
  }
  next
}

# inside a typedef (until the line that ends it)
state == 2 {
  tdtext = tdtext "\n" $0
  depth += gsub(/\{/, "{") - gsub(/\}/, "}")
  if (depth <= 0 && $0 ~ /;[ \t]*$/) {
    tn = type_name($0 ~ /^}/ ? $0 : tdtext)
    if (tdtext ~ /[{]/ || tdtext ~ /\(\*/) {
      tdef[tn] = tdtext
      tdef_com[tn] = tdcom
    }
    state = 0
  }
  next
}

# inside a function declaration
state == 3 {
  proto = proto "\n" $0
  if ($0 ~ /;[ \t]*$/) {
    state = 0
    end_function()
  }
  next
}

/^[ \t]*\/\*/ {
  flush_comment()
  in_group = 0
  add_comment_line($0)
  if ($0 !~ /\*\//)
    state = 1
  else
    end_comment()
  next
}

/^[ \t]*$/ { flush_comment(); in_group = 0; next }

/^typedef/ {
  tdtext = $0
  tdcom = ""
  for (i = 1; i <= ncom; i++)
    tdcom = tdcom (i > 1 ? "\n" : "") comline[i]
  flush_comment()
  in_group = 0
  depth = gsub(/\{/, "{") - gsub(/\}/, "}")
  if (depth <= 0 && $0 ~ /;[ \t]*$/) {
    tn = type_name(tdtext)
    if (tdtext ~ /[{]/ || tdtext ~ /\(\*/) {
      tdef[tn] = tdtext
      tdef_com[tn] = tdcom
    }
  } else
    state = 2
  next
}

/^[A-Za-z_].*[ *]bpc_[a-z0-9_]+\(/ && $0 !~ /^(static|extern|#)/ {
  proto = $0
  if ($0 ~ /;[ \t]*$/)
    end_function()
  else
    state = 3
  next
}

# anything else (preprocessor lines, enums, closing braces) ends a group
{ if ($0 !~ /^[ \t]/) { flush_comment(); in_group = 0 } }

function end_function(   nm) {
  match(proto, /bpc_[a-z0-9_]+\(/)
  nm = substr(proto, RSTART, RLENGTH - 1)
  if (!in_group) {
    if (ncom == 0) {
      printf "mkman: %s: %s has no comment of its own\n", FILENAME, nm > "/dev/stderr"
      errors++
    }
    start_group()
    in_group = 1
  }
  gnf[ngroups]++
  gfn[ngroups, gnf[ngroups]] = nm
  gproto[ngroups, gnf[ngroups]] = proto
  fgroup[nm] = ngroups
  funcs[++nfuncs] = nm
}

# NAME line: the comment's first sentence, without a leading "name:" and cut
# before a parenthesis, colon or semicolon once it is long
function summary(g,   s, i, cut) {
  s = ""
  for (i = 1; i <= gcom_n[g]; i++) {
    if (trim(gcom[g, i]) == "")
      break
    s = s (s == "" ? "" : " ") trim(gcom[g, i])
  }
  sub(/^bpc_[a-z0-9_]+(, bpc_[a-z0-9_]+)*:[ \t]*/, "", s)
  if (match(s, /\.( |$)/))
    s = substr(s, 1, RSTART - 1)
  if (length(s) > 76) {
    cut = 0
    for (i = 30; i <= length(s) && i <= 76; i++)
      if (substr(s, i, 1) ~ /[(;:]/) {
        cut = i
        break
      }
    if (cut > 0)
      s = trim(substr(s, 1, cut - 1))
  }
  return s
}

function emit_typedefs(g, f,   i, j, t, text, seen, n, names, k, nm) {
  text = ""
  for (i = 1; i <= gnf[g]; i++)
    text = text " " gproto[g, i]
  n = 0
  while (match(text, /bpc_[a-z0-9_]+_(t|fn)/)) {
    nm = substr(text, RSTART, RLENGTH)
    text = substr(text, RSTART + RLENGTH)
    if ((nm in tdef) && !(nm in seen)) {
      seen[nm] = 1
      names[++n] = nm
    }
  }
  for (k = 1; k <= n; k++) {
    nm = names[k]
    if (tdef_com[nm] != "") {
      m = split(tdef_com[nm], cl, "\n")
      for (j = 1; j <= m; j++)
        print esc((j == 1 ? "/* " : " * ") cl[j]) > f
      print esc(" */") > f
    }
    m = split(tdef[nm], tl, "\n")
    for (j = 1; j <= m; j++)
      print esc(tl[j]) > f
    print ".sp" > f
  }
}

function emit_description(g, f,   i, t, inlist, first) {
  inlist = 0
  first = 1
  for (i = 1; i <= gcom_n[g]; i++) {
    t = gcom[g, i]
    if (first) {
      sub(/^bpc_[a-z0-9_]+(, bpc_[a-z0-9_]+)*:[ \t]*/, "", t)
      if (trim(t) == "")
        continue
      t = capital(t)
      first = 0
    }
    if (trim(t) == "") {
      print ".PP" > f
      inlist = 0
    } else if (t ~ /^ *- /) {
      sub(/^ *- /, "", t)
      print ".IP \\(bu 2" > f
      print prose(trim(t)) > f
      inlist = 1
    } else if (inlist && t ~ /^   /) {
      print prose(trim(t)) > f
    } else if (t ~ /^(Errors|Ownership|Threading|Collective|Cost|Order)[^:]*:/) {
      print ".PP" > f
      inlist = 0
      print prose(trim(t)) > f
    } else {
      if (inlist)
        print ".PP" > f
      inlist = 0
      print prose(trim(t)) > f
    }
  }
}

END {
  if (errors > 0)
    exit 1
  for (k = 1; k <= nfuncs; k++) {
    nm = funcs[k]
    g = fgroup[nm]
    f = out "/" nm ".3"
    hdr = base(gfile[g])
    area = hdr
    sub(/\.h$/, "", area)
    print ".\\\" Generated by doc/man/mkman.sh from include/bpc/" hdr "; do not edit." > f
    print ".TH " toupper(nm) " 3 \"\" \"bpc\" \"bpc library functions\"" > f
    print ".nh" > f
    print ".ad l" > f
    print ".SH NAME" > f
    names = ""
    for (i = 1; i <= gnf[g]; i++)
      names = names (i > 1 ? ", " : "") gfn[g, i]
    print esc(names) " \\- " prose(summary(g)) > f
    print ".SH SYNOPSIS" > f
    print ".nf" > f
    print ".B #include <bpc.h>" > f
    print ".sp" > f
    emit_typedefs(g, f)
    for (i = 1; i <= gnf[g]; i++) {
      m = split(gproto[g, i], pl, "\n")
      for (j = 1; j <= m; j++)
        print esc(pl[j]) > f
    }
    print ".fi" > f
    print ".SH DESCRIPTION" > f
    emit_description(g, f)
    print ".SH SEE ALSO" > f
    sa = ""
    for (j = 1; j <= nfuncs; j++) {
      o = funcs[j]
      if (o == nm || fgroup[o] == g || base(gfile[fgroup[o]]) != hdr)
        continue
      sa = sa (sa == "" ? "" : ",\n") ".BR " o " (3)"
    }
    if (sa != "")
      print sa > f
    print ".PP" > f
    print "doc/" area ".md in the bpc sources (the guide to this area), and" > f
    print ".I include/bpc/" hdr > f
    print "(the header these pages are made from)." > f
    close(f)
  }
}
