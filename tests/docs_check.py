#!/usr/bin/env python3
"""The docs test (ctest lint.docs): the README, CONTRIBUTING.md and docs/ hold together.

usage: docs_check.py REPO TRACEFUSE

Fails, naming the file and line of each problem, when
  - a relative link or image of README.md, CONTRIBUTING.md or a page of docs/ does not resolve: the
    file is missing, it lies outside the repository, or its #anchor is no heading of the target
    page (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats);
  - a page of docs/ (*.md) is not linked from README.md, or another file of docs/ (a picture) is
    linked from no page that the README reaches;
  - a subcommand that `TRACEFUSE --help` lists has no row in the README's command table (the table
    whose header starts with "command"; a row names its command as `tracefuse NAME ...` in its
    first cell), or the table has a row for a command that --help does not list;
  - a command written out in a page (`tracefuse CMD ...` anywhere in a line: code blocks, code
    spans and prose alike, with the lines of a usage block that continue it) gives an option that `TRACEFUSE CMD --help` does not
    list, or a value that the option's list of values lacks (`--format json`, `--format
    text|json|csv`, `--csv-table=ops`; placeholders in capitals are not checked);
  - a folder of the code (under src/ or include/tracefuse/, holding files) is missing from the tree
    of docs/architecture.md (its section "The tree"), a folder of src/ from the tree of
    CONTRIBUTING.md, or a tree names a folder that does not exist.
Links inside code blocks and inline code are not links. Only the Python standard library.
"""
import os
import re
import subprocess
import sys
import unicodedata
from collections import Counter

FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
# [text](target) or ![alt](target); text may hold one level of brackets (an image in a link).
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
CODE_SPAN = re.compile(r'(`+)(.+?)\1')


def markdown_lines(path):
    """(line number, text) of the lines outside fenced and indented code blocks, code spans blanked."""
    out = []
    in_fence = False
    previous_blank = True
    in_indented = False
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if FENCE.match(line):
                in_fence = not in_fence
                previous_blank = False
                continue
            if in_fence:
                continue
            blank = not line.strip()
            # An indented code block: lines indented by four after a blank line, and the lines
            # that continue it.
            if not blank and line.startswith('    ') and (previous_blank or in_indented):
                in_indented = True
                previous_blank = False
                continue
            if not blank:
                in_indented = False
            previous_blank = blank
            out.append((number, CODE_SPAN.sub(lambda m: ' ' * len(m.group(0)), line)))
    return out


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # links: their text
    text = text.replace('`', '').lower()
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in ' -' or category[0] in 'LMN' or category == 'Pc':
            kept.append(ch)
    return ''.join(kept).replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        seen = Counter()
        found = set()
        in_fence = False
        with open(path, encoding='utf-8') as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if m:
                    base = slug(m.group(2))
                    found.add(base if seen[base] == 0 else f'{base}-{seen[base]}')
                    seen[base] += 1
        cache[path] = found
    return cache[path]


def links(path):
    for number, line in markdown_lines(path):
        for m in LINK.finditer(line):
            yield number, m.group(1)


def check_links(repo, pages, problems):
    """Resolves every relative link; returns the graph page -> files it links inside the repo."""
    graph = {}
    for page in pages:
        rel = os.path.relpath(page, repo)
        targets = set()
        for number, target in links(page):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition('#')
            resolved = page if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(page), file_part))
            where = f'{rel}:{number}: link {target}'
            if os.path.relpath(resolved, repo).startswith('..'):
                problems.append(f'{where}: leaves the repository')
                continue
            if not os.path.exists(resolved):
                problems.append(f'{where}: no file {os.path.relpath(resolved, repo)}')
                continue
            targets.add(resolved)
            if anchor and resolved.endswith('.md') and anchor not in anchors(resolved):
                problems.append(f'{where}: no heading #{anchor} in {os.path.relpath(resolved, repo)}')
        graph[page] = targets
    return graph


def check_reachable(repo, readme, docs_files, graph, problems):
    for f in docs_files:
        if f.endswith('.md') and f not in graph[readme]:
            problems.append(f'README.md: does not link {os.path.relpath(f, repo)}')
    reached, todo = {readme}, [readme]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    for f in docs_files:
        if not f.endswith('.md') and f not in reached:
            problems.append(f'{os.path.relpath(f, repo)}: linked from no page the README reaches')


def subcommands(tracefuse):
    help_text = subprocess.run([tracefuse, '--help'], capture_output=True, text=True,
                               check=True).stdout
    listed = help_text.split('\nSubcommands:\n', 1)[1].split('\n\n', 1)[0]
    return [m.group(1) for m in re.finditer(r'^  ([a-z][a-z-]*)\s', listed, re.M)]


def command_table(readme):
    """(line, command) of each row of the README's command table."""
    rows, in_table = [], False
    for number, line in markdown_lines(readme):
        cells = [c.strip() for c in line.strip().strip('|').split('|')] if line.lstrip().startswith('|') else None
        if cells is None:
            in_table = False
            continue
        if not in_table and cells[0].lower() == 'command':
            in_table = True
            continue
        if in_table and not set(cells[0]) <= set('-: '):
            rows.append((number, cells[0]))
    return rows


def check_commands(repo, readme, tracefuse, problems):
    # Code spans are blanked in markdown_lines(): read the rows' first cells from the raw lines.
    raw = open(readme, encoding='utf-8').read().split('\n')
    rows = command_table(readme)
    if not rows:
        problems.append('README.md: no command table (a table whose first column is "command")')
        return
    named = {}
    for number, _ in rows:
        first = raw[number - 1].strip().strip('|').split('|')[0]
        m = re.search(r'tracefuse ([a-z][a-z-]*)', first)
        if not m:
            problems.append(f'README.md:{number}: command table row names no `tracefuse COMMAND`')
            continue
        named[m.group(1)] = number
    listed = subcommands(tracefuse)
    for command in listed:
        if command not in named:
            problems.append(f"README.md: the command table has no row for `tracefuse {command}` "
                            f"('{os.path.basename(tracefuse)} --help' lists it)")
    for command, number in named.items():
        if command not in listed:
            problems.append(f'README.md:{number}: `tracefuse {command}` is no subcommand of '
                            f"'{os.path.basename(tracefuse)} --help'")


HELP_OPTION = re.compile(r'^  (?:-\w,)?(--[a-z][\w-]*)(?:\{[^}]*\})?(?:\s+(\S+))?', re.M)


def command_options(tracefuse, command):
    """{option: its values (a set), or None where any value goes} of `tracefuse COMMAND --help`
    (`command`: its words, "bench classify")."""
    text = subprocess.run([tracefuse, *command.split(), '--help'], capture_output=True, text=True,
                          check=True).stdout
    options = {}
    for m in HELP_OPTION.finditer(text):
        values = re.search(r':\{([^}]*)\}', m.group(2) or '')
        options[m.group(1)] = set(values.group(1).split(',')) if values else None
    return options


def command_lines(path):
    """(line number, text) of each command written out in `path`: `tracefuse CMD ...` to the end
    of its line or code span, joined with the usage lines that continue it ("    [--x]")."""
    lines = open(path, encoding='utf-8').read().split('\n')
    out = []
    for i, line in enumerate(lines):
        for m in re.finditer(r'(?<![\w/-])tracefuse ([a-z][a-z-]*)([^`]*)', line):
            text = m.group(0)
            j = i + 1
            while j < len(lines) and re.match(r'^\s{8,}\[', lines[j]):
                text += ' ' + lines[j].strip()
                j += 1
            out.append((i + 1, text))
    return out


def check_command_lines(repo, pages, tracefuse, problems):
    listed = set(subcommands(tracefuse))
    known = {}
    for page in pages:
        for number, text in command_lines(page):
            tokens = text.replace('[', ' ').replace(']', ' ').split()
            command = tokens[1]
            if command not in listed:
                continue
            if command == 'bench' and len(tokens) > 2 and not tokens[2].startswith('-'):
                command += ' ' + tokens[2]  # its own subcommand, with its own options
            if command not in known:
                known[command] = command_options(tracefuse, command)
            options = known[command]
            where = f'{os.path.relpath(page, repo)}:{number}'
            for k, token in enumerate(tokens[2:], 2):
                if not token.startswith('--'):
                    continue
                name, _, value = token.partition('=')
                name = name.rstrip('.,;:)\'"')
                if name not in options:
                    problems.append(f'{where}: `tracefuse {command}` has no option {name}')
                    continue
                if options[name] is None:
                    continue
                if not value and k + 1 < len(tokens):
                    value = tokens[k + 1]
                for v in re.split(r'[|,]', value.rstrip('.;:)\'"')):
                    if v and not v.startswith('-') and not re.search(r'[A-Z]', v) \
                            and v not in options[name]:
                        problems.append(f'{where}: `tracefuse {command} {name}` takes no '
                                        f"value '{v}' (of: {', '.join(sorted(options[name]))})")


FOLDER = re.compile(r'(?<![\w/.-])((?:src|include/tracefuse)/(?:[a-z0-9_-]+/)+)')


def code_folders(repo, top):
    """The folders under `top` that hold files, as 'top/a/b/'."""
    out = set()
    for root, _, names in os.walk(os.path.join(repo, top)):
        if names:
            out.add(os.path.relpath(root, repo).replace(os.sep, '/') + '/')
    return out


def tree_folders(path):
    """(folders, line of the heading) named in the section "The tree" of a page, code included."""
    folders, level, heading_line = set(), None, None
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            heading = HEADING.match(line) if not line.startswith('    ') else None
            if heading and level is not None and len(heading.group(1)) <= level:
                break
            if heading and heading.group(2) == 'The tree':
                level, heading_line = len(heading.group(1)), number
            elif level is not None:
                folders.update(FOLDER.findall(line))
    return folders, heading_line


def check_trees(repo, problems):
    code = code_folders(repo, 'src') | code_folders(repo, 'include/tracefuse')
    for page, tops in (('docs/architecture.md', ('src/', 'include/tracefuse/')),
                       ('CONTRIBUTING.md', ('src/',))):
        named, heading_line = tree_folders(os.path.join(repo, page))
        if heading_line is None:
            problems.append(f'{page}: no section "The tree"')
            continue
        for folder in sorted(f for f in code if f.startswith(tops) and f not in named):
            problems.append(f'{page}:{heading_line}: the tree does not list {folder}')
        for folder in sorted(f for f in named if f not in code and f.startswith(tops)):
            problems.append(f'{page}:{heading_line}: the tree lists {folder}, which holds no file')


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    repo, tracefuse = os.path.abspath(sys.argv[1]), sys.argv[2]
    readme = os.path.join(repo, 'README.md')
    docs = os.path.join(repo, 'docs')
    docs_files = sorted(os.path.join(root, name) for root, _, names in os.walk(docs)
                        for name in names)
    pages = [readme, os.path.join(repo, 'CONTRIBUTING.md')] + [f for f in docs_files
                                                               if f.endswith('.md')]
    problems = []
    for page in pages:
        if not os.path.exists(page):
            problems.append(f'{os.path.relpath(page, repo)}: missing')
    pages = [p for p in pages if os.path.exists(p)]
    graph = check_links(repo, pages, problems)
    check_reachable(repo, readme, docs_files, graph, problems)
    check_commands(repo, readme, tracefuse, problems)
    check_command_lines(repo, pages, tracefuse, problems)
    check_trees(repo, problems)
    for p in problems:
        print(f'docs_check: {p}')
    if problems:
        print(f'docs_check: {len(problems)} problem(s)')
        return 1
    print(f'docs_check: {len(pages)} pages, {sum(len(t) for t in graph.values())} distinct link '
          f'targets, every docs page linked from the README, {len(subcommands(tracefuse))} '
          'subcommands in the command table, every code folder in the trees')
    return 0


if __name__ == '__main__':
    sys.exit(main())
