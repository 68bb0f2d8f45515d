"""The secret scanner: credentials found by their own shape, in every field, on decoded forms.

One scanner serves recording (``Player.save``), ``ssemock validate``, ``ssemock redact`` and the
masking of every message (`ssemock.redaction.rules`'s ``mask_text``). It finds:

* provider credentials by shape: OpenAI (``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-``),
  Anthropic (``sk-ant-``), Google API keys (``AIza``) and OAuth tokens (``ya29.``), GitHub
  (``ghp_`` ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` ``github_pat_``), AWS access key ids (``AKIA``,
  ``ASIA``) and a 40-character secret beside one, Slack (``xox?-``), Stripe (``sk_live_``,
  ``rk_live_``), Hugging Face (``hf_``), Groq (``gsk_``), xAI (``xai-``), JWTs, PEM private keys,
  and ``Bearer`` / ``Basic`` credentials;
* in headers, query parameters and form bodies: a high-entropy value whose name says token,
  secret, key, auth, password, signature, session or cookie; any ``user:password@`` in a URL.

A shape is matched where it starts, whatever comes before it, and where a field holds an escape
that hides a character keys are made of (JSON ``\\u00XX`` or ``\\/``, ``%XX`` at any depth), the
text around it is scanned once more decoded; offsets always point into the original.

Its parts: the shapes found in bytes or text (`ssemock.scan.credential_shapes`), the fields of a
request or response and the names that say a value is a credential (`ssemock.scan.fields`), and
the masking of messages (`ssemock.scan.messages`); their names are all found here.
"""

from .credential_shapes import B64_RUN as B64_RUN
from .credential_shapes import REDACTED as REDACTED
from .credential_shapes import Finder as Finder
from .credential_shapes import Secret, base64_text, scan
from .fields import (
    CREDENTIAL_NAME,
    SECRET_NAME,
    credential_name,
    entropy,
    looks_random,
    scan_body,
    scan_form,
    scan_header,
    scan_json_members,
    scan_named,
    scan_url,
)
from .fields import FORM as FORM
from .fields import credential_member as credential_member
from .fields import credential_value as credential_value
from .fields import query_spans as query_spans
from .messages import escape_control, mask_text, safe_message, secret_spans, value_shape

__all__ = [
    "CREDENTIAL_NAME",
    "scan_json_members",
    "SECRET_NAME",
    "Secret",
    "base64_text",
    "credential_name",
    "entropy",
    "escape_control",
    "looks_random",
    "mask_text",
    "secret_spans",
    "safe_message",
    "scan",
    "scan_body",
    "scan_form",
    "scan_header",
    "scan_named",
    "scan_url",
    "value_shape",
]
