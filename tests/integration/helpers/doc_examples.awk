# SPDX-License-Identifier: MIT
#
# Extracts every srun/sbatch/salloc/#SBATCH example from Markdown files
# (fenced code blocks and `inline code`) and man pages (.EX/.EE and
# .nf/.fi blocks), for tests/integration/docs_examples.bats.  POSIX awk.
#
# Output, one example per group of lines:
#   EX <TAB> FILE:LINE <TAB> KEY          KEY: the example's first line
#   D <TAB> #SBATCH ...                   a directive: the example is a
#                                         batch script
#   A <TAB> salloc ...                    the allocation the following
#                                         srun lines run in
#   S <TAB> srun ... | sbatch ...         a command (continuations joined)
#   P <TAB> program ...                   a batch script's own command
#   V <TAB> NAME=VALUE                    an export before the command
#   O <TAB> text                          output the docs show for the
#                                         last "$ command"
#   X <TAB> N                             "# exits N" in a comment
#   END
# Lines inside a code block are read in order: #SBATCH lines (with a
# "#!" line before them) start a batch script that takes the srun and
# program lines after it; "salloc" starts an allocation that takes the
# srun lines after it; any other srun/sbatch line is an example of its
# own; "export" lines apply to every later example of the block.
#
# With -v kind=helper it extracts the examples that run nccl-warmup by
# hand instead (docs_examples.bats, "by-hand nccl-warmup"): a line whose
# command is nccl-warmup or a path ending in /nccl-warmup, after "$ ",
# "exec", VAR=VALUE assignments or a shell keyword ("for ...; do
# nccl-warmup ... & done; wait" is one example), and `inline code` that
# starts with nccl-warmup and an option:
#   EX <TAB> FILE:LINE <TAB> KEY
#   V <TAB> NAME=VALUE                    an export before the command
#   H <TAB> command                       the shell line, as shown
#   O <TAB> text                          output shown after "$ command"
#   X <TAB> N                             "# exits N" in a comment
#   END
#
# With -v kind=plugstack, the plugstack.conf lines that load spank-nccl
# ("required|optional PATH/spank_nccl.so ARGS", continuations joined):
#   EX <TAB> FILE:LINE <TAB> KEY
#   L <TAB> line
#   END

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# Man page escapes to text.
function deroff(s) {
	gsub(/\\-/, "-", s)
	gsub(/\\e/, "\\", s)
	gsub(/\\&/, "", s)
	gsub(/\\\(em/, "-", s)
	return s
}

function flush(    i, directives) {
	directives = 0
	for (i = 1; i <= n_lines; i++)
		if (lines[i] ~ /^D\t/)
			directives++
	# A script without #SBATCH lines is no sbatch example.
	if (group == "batch" && directives == 0)
		n_lines = 0
	if (n_lines > 0) {
		printf "EX\t%s:%d\t%s\n", FILENAME, ex_line, ex_key
		for (i = 1; i <= n_lines; i++)
			print lines[i]
		print "END"
	}
	n_lines = 0
	group = ""
}

function add(type, text) {
	lines[++n_lines] = type "\t" text
}

# Starts a new example at LINENO with KEY, closing the current one.
function start(kind, key) {
	flush()
	group = kind
	ex_line = start_line
	ex_key = key
	for (e = 1; e <= n_env; e++)
		add("V", env[e])
}

function comment_exit(c) {
	if (match(c, /exits [0-9]+/)) {
		c = substr(c, RSTART + 6, RLENGTH - 6)
		add("X", c)
	}
}

# True when TEXT runs nccl-warmup: its command word, after separators,
# "exec", a shell keyword or VAR=VALUE assignments, is nccl-warmup or a
# path ending in /nccl-warmup (not an argument of another command).
function helper_cmd(text) {
	return text ~ /(^|[;&|(][ ]*|(do|then|exec|time)[ ]+)([A-Za-z_][A-Za-z0-9_]*=[^ ]*[ ]+)*(\/[^ ]*\/)?nccl-warmup([ ;&)]|$)/
}

# One logical line of a code block, kind=helper.
function helper_line(raw, text, prompt, comment) {
	if (helper_cmd(text)) {
		start("helper", text)
		add("H", text)
		comment_exit(comment)
		group = prompt ? "output" : "helper"
		return
	}
	# Another command ends the output of the last one.
	if (prompt) {
		flush()
		return
	}
	if (group == "output")
		lines[++n_lines] = "O\t" raw
}

# One logical line of a code block.
function block_line(raw,    text, prompt, comment, cmd) {
	text = raw
	prompt = 0
	if (text ~ /^[ \t]*\$ /) {
		sub(/^[ \t]*\$ /, "", text)
		prompt = 1
	}
	text = trim(text)
	# A comment after two spaces or a tab ("cmd   # why").
	comment = ""
	if (text !~ /^#/ && match(text, /[ \t]+# /)) {
		comment = substr(text, RSTART)
		text = trim(substr(text, 1, RSTART - 1))
	} else if (text ~ /^#SBATCH/ && match(text, /[ \t]+# /)) {
		comment = substr(text, RSTART)
		text = trim(substr(text, 1, RSTART - 1))
	}
	if (text == "") {
		if (group == "output")
			group = ""
		return
	}
	if (kind != "" && text ~ /^#/)
		return
	if (text ~ /^#!/) {
		start("batch", text)
		return
	}
	if (text ~ /^#SBATCH[ \t]/) {
		if (group != "batch")
			start("batch", text)
		add("D", text)
		return
	}
	if (text ~ /^#/)
		return
	if (text ~ /^export [A-Za-z_][A-Za-z0-9_]*=/) {
		sub(/^export /, "", text)
		env[++n_env] = text
		if (group != "")
			flush()
		return
	}
	if (kind == "helper") {
		helper_line(raw, text, prompt, comment)
		return
	}
	if (kind == "plugstack") {
		if (text ~ /^(required|optional)[ \t]+[^ \t]*\/spank_nccl\.so([ \t]|$)/) {
			start("plugstack", text)
			add("L", text)
			flush()
		}
		return
	}
	cmd = text
	sub(/[ \t].*/, "", cmd)
	if (cmd == "salloc") {
		start("salloc", text)
		add("A", text)
		comment_exit(comment)
		return
	}
	if (cmd == "srun" || cmd == "sbatch") {
		if (group != "batch" && group != "salloc")
			start("single", text)
		add("S", text)
		comment_exit(comment)
		if (prompt)
			group = (group == "single") ? "output" : group
		return
	}
	if (group == "output" && !prompt) {
		lines[++n_lines] = "O\t" raw
		return
	}
	if (group == "batch")
		add("P", text)
}

function end_block() {
	flush()
	n_env = 0
	in_block = 0
}

FNR == 1 {
	if (in_block)
		end_block()
	man = FILENAME ~ /\.[0-9](\.in)?$/
	pending = ""
}

# Markdown fences.
!man && /^[ \t]*```/ {
	if (in_block) {
		end_block()
	} else {
		in_block = 1
		n_env = 0
	}
	next
}

# Man page example blocks.
man && /^\.(EX|nf)([ \t]|$)/ { in_block = 1; n_env = 0; next }
man && /^\.(EE|fi)([ \t]|$)/ { end_block(); next }

in_block {
	line = man ? deroff($0) : $0
	if (man && line ~ /^\./)
		next
	if (pending == "")
		start_line = FNR
	# Continuation lines ("\" at the end) join the next line.
	if (line ~ /\\$/) {
		sub(/\\$/, "", line)
		pending = pending line " "
		next
	}
	line = pending line
	pending = ""
	gsub(/[ \t]+/, " ", line)
	block_line(line)
	next
}

# `inline code` in Markdown prose and tables: one command each.
!man {
	rest = $0
	while (match(rest, /`[^`]+`/)) {
		span = substr(rest, RSTART + 1, RLENGTH - 2)
		rest = substr(rest, RSTART + RLENGTH)
		if (kind == "plugstack")
			continue
		if (kind == "helper") {
			if (span !~ /^(\/[^ ]*\/)?nccl-warmup -/)
				continue
			start_line = FNR
			n_env = 0
			start("helper", span)
			add("H", span)
			flush()
			continue
		}
		if (span !~ /^(srun|sbatch|salloc|#SBATCH) [^ ]/)
			continue
		start_line = FNR
		n_env = 0
		if (span ~ /^#SBATCH/) {
			start("batch", span)
			add("D", span)
		} else if (span ~ /^salloc/) {
			start("salloc", span)
			add("A", span)
		} else {
			start("single", span)
			add("S", span)
		}
		flush()
	}
}

END {
	if (in_block)
		end_block()
}
