"""A corpus of secrets (each in a sentence a user might paste) and of look-alikes that
are not secrets. The secrets are made here from each provider's documented form, with
random bodies from a fixed seed: none is a real credential."""

from __future__ import annotations

import base64
import random
import string
import uuid

_rng = random.Random(20261126)
ALNUM = string.ascii_letters + string.digits


def _s(n: int, alphabet: str = ALNUM) -> str:
    body = "".join(_rng.choice(alphabet) for _ in range(n))
    return body if any(c.isdigit() for c in body) else body[:-1] + "7"


def _secrets() -> list[tuple[str, str, str]]:
    """(kind, the secret, the text it is in)."""
    made: list[tuple[str, str]] = []
    for _ in range(4):
        made += [
            ("openai", "sk-proj-" + _s(48, ALNUM + "_-")),
            ("anthropic", "sk-ant-api03-" + _s(93, ALNUM + "_-") + "AA"),
            ("github", "ghp_" + _s(36)),
            ("aws-access-key", "AKIA" + _s(16, string.ascii_uppercase + string.digits)),
            ("google", "AIza" + _s(35, ALNUM + "_-")),
            ("slack", "xoxb-" + _s(11, string.digits) + "-" + _s(24)),
            ("stripe", "sk_live_" + _s(24)),
            ("huggingface", "hf_" + _s(34)),
            ("gitlab", "glpat-" + _s(20, ALNUM + "_-")),
            ("npm", "npm_" + _s(36)),
            ("sendgrid", "SG." + _s(22, ALNUM + "_-") + "." + _s(43, ALNUM + "_-")),
            ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI" + _s(20) + "." + _s(43)),
        ]
    made += [("github", "github_pat_" + _s(82, ALNUM + "_")),
             ("twilio", "SK" + _s(32, "0123456789abcdef")),
             ("aws-secret-key", _s(40, ALNUM + "/+"))]
    templates = [
        "here is my key {} use it for the tests",
        "export API_TOKEN={}",
        "ok so the config has \"{}\" in it, is that fine?",
        "Error: 401 Unauthorized (key={}) when calling the API",
    ]
    out = []
    for n, (kind, secret) in enumerate(made):
        text = templates[n % len(templates)].format(secret)
        if kind == "aws-secret-key":
            text = f"aws_secret_access_key = {secret}"
        out.append((kind, secret, text))
    pem = "\n".join(base64.b64encode(_rng.randbytes(48)).decode() for _ in range(6))
    out += [
        ("private-key", pem, f"-----BEGIN RSA PRIVATE KEY-----\n{pem}\n"
                             "-----END RSA PRIVATE KEY-----"),
        ("private-key", pem[:60], f"-----BEGIN OPENSSH PRIVATE KEY-----\n{pem[:60]}"),
        ("connection-string", "Sup3rS3cret!", "DATABASE_URL=postgres://app:Sup3rS3cret!@db:5432/x"),
        ("connection-string", "pa55word", "mongodb+srv://admin:pa55word@cluster0.mongodb.net/"),
        ("assignment", "hunter2hunter2", "password: hunter2hunter2"),
        ("assignment", "c0rrect-h0rse", "my wifi password is c0rrect-h0rse"),
        ("assignment", "s3cr3t_value_9", '{"client_secret": "s3cr3t_value_9"}'),
        ("bearer", "abc123def456ghi789jkl012mno", "curl -H 'Authorization: Bearer "
                                                   "abc123def456ghi789jkl012mno' https://x"),
        ("high-entropy", "q8Xz2Lw9Rt4Vn6Bm1Kp3Hs7Jd5Fg0Ye", "the signing key for staging: "
                                                         "q8Xz2Lw9Rt4Vn6Bm1Kp3Hs7Jd5Fg0Ye"),
        ("private", "my therapist said", "fine <private>my therapist said</private> thanks"),
    ]
    return out


def _look_alikes() -> list[str]:
    out = []
    for _ in range(10):
        out.append(f"fixed in commit {_rng.randbytes(20).hex()} last week")
        out.append(f"the request id was {uuid.UUID(int=_rng.getrandbits(128))}")
    out += [f"sha256: {_rng.randbytes(32).hex()} for the release tarball" for _ in range(5)]
    image = base64.b64encode(_rng.randbytes(90)).decode()
    out += [
        f"![chart](data:image/png;base64,{image})",
        "the password field must be at least 12 characters long",
        "token: the next one",
        "use the API key from the vault, never paste it",
        "password = getpass.getpass()",
        "api_key = os.environ['OPENAI_API_KEY']",
        "token: ${GITHUB_TOKEN}",
        "the secret is to let the dough rest overnight",
        "keyboard shortcuts for the editor: mod+shift+k",
        "see https://github.com/logseq/logseq/pull/11255 for the key handling",
        "my public key is ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq8Xz2Lw9Rt4Vn6Bm1Kp3Hs7Jd5Fg0"
        "YeTq2 me@laptop",
        "the token count was 4096 and the context window 128000",
        "version 2.14.3-beta.1+build.20261126",
        "my phone number is +49 151 23456789",
        "the access key rotation happens on the first Monday",
        "key: hook-ui-page-file-mounted",
        "color #3f2a9c and #ffffff",
        "ISBN 978-3-16-148410-0",
        "the secret garden by frances hodgson burnett",
        "our token ring network from 1995",
        "password reset link expires in 24 hours",
        "sk-learn is how people misspell scikit-learn",
        "the AWS region is eu-central-1 and the bucket my-bucket-2024",
        "run pytest -k test_auth_token_refresh",
        "bearer of good news",
    ]
    return out


SECRETS = _secrets()
LOOK_ALIKES = _look_alikes()
