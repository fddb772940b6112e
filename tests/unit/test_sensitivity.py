"""What "reads as high" means: pasted secrets, cards, SSNs and stated PINs; never their look-alikes.

Every secret below is fake. Token-shaped strings are built by concatenation so that no literal full
token appears in the source (GitHub push protection scans for them).
"""

from __future__ import annotations

import pytest

from chalicelib import sensitivity
from chalicelib.sensitivity import (
    KINDS,
    TOO_MANY_CANDIDATES,
    high_shapes,
    is_sensitive,
    is_sensitive_embedded,
    is_sensitive_excerpt,
)

# Fake credentials, assembled from obviously fake parts.
AWS_KEY = "AKIA" + "EXAMPLE" + "FAKEKEY01"
AWS_SESSION_KEY = "ASIA" + "FAKE" + "0000" + "EXAMPLE1"
AWS_KEY_2 = "AKIA" + "ZZZZZZZZ" + "TEST" * 2
OPENAI_KEY = "sk-" + "Fake" + "0a1B2c3D" * 5
OPENAI_PROJECT_KEY = "sk-" + "proj-" + "FaKe_" + "x9Y8z7W6" * 10 + "-T3stOnly"
OPENAI_SHORT_KEY = "sk-" + "abc123DEF456ghi789JK"
GITHUB_PAT = "ghp_" + "a1B2" * 9
GITHUB_OAUTH = "gho_" + "F4k3" * 9
GITHUB_SERVER = "ghs_" + "0xYz" * 9
GITHUB_USER = "ghu_" + "t3St" * 9
GITHUB_REFRESH = "ghr_" + "Ex4m" * 9
GITHUB_FINE_GRAINED = "github_pat_" + "11FAKE0" + "A" * 15 + "_" + "aB3" * 20
SLACK_BOT = "xoxb-" + "1234567890" + "-" + "0987654321" + "-" + "FakeSlackToken" + "0" * 10
SLACK_USER = "xoxp-" + "1111111111" + "-" + "2222222222" + "-" + "3333333333" + "-" + "f" * 32
SLACK_APP = "xoxa-" + "2-" + "9" * 12 + "-FakeFake"
SLACK_REFRESH = "xoxr-" + "5" * 12 + "-ExampleOnly"
SLACK_SESSION = "xoxs-" + "7" * 12 + "-NotReal1"
SLACK_ROTATED = "xoxe-" + "1-" + "My4x" * 6 + "9"
SLACK_BROWSER = "xoxc-" + "1234567890-" * 2 + "abcdef" * 3
SLACK_COOKIE = "xoxd-" + "Xk2%2F" + "abcd1234" * 3
JWT = (
    "eyJ"
    + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    + ".eyJ"
    + "zdWIiOiJmYWtlLXVzZXIiLCJuYW1lIjoiVGVzdCJ9"
    + "."
    + "fakeSignature_"
    + "0123456789abcdef"
)
JWT_UNSIGNED = "eyJ" + "hbGciOiJub25lIn0" + ".eyJ" + "zdWIiOiJ0ZXN0In0" + "."
PEM_HEAD = "-----BEGIN "
PEM_TAIL = "PRIVATE" + " KEY-----"


def pem(label: str = "") -> str:
    """A fake PEM private-key header with the given label ("RSA ", "EC ", ...)."""
    return PEM_HEAD + label + PEM_TAIL


POSITIVES: list[tuple[str, bool, str]] = [
    # aws_key
    (f"here's our access key: {AWS_KEY}", True, "aws_key"),
    (f"AWS_ACCESS_KEY_ID={AWS_KEY}\nregion=us-east-1", True, "aws_key"),
    (f"the temporary creds start with {AWS_SESSION_KEY}, do they expire?", True, "aws_key"),
    (f"aws configure set aws_access_key_id {AWS_KEY_2}", True, "aws_key"),
    (f'{{"AccessKeyId": "{AWS_SESSION_KEY}", "Expiration": "2024-06-01"}}', True, "aws_key"),
    (f"why does boto3 say InvalidClientTokenId for {AWS_KEY}?", True, "aws_key"),
    (f"key={AWS_KEY_2};region=eu-west-1", True, "aws_key"),
    (f"[default]\naws_access_key_id = {AWS_KEY}", True, "aws_key"),
    # openai_key
    (f"my openai key is {OPENAI_KEY} can you check why it 401s", True, "openai_key"),
    (f"OPENAI_API_KEY={OPENAI_PROJECT_KEY}", True, "openai_key"),
    (f'client = OpenAI(api_key="{OPENAI_KEY}")', True, "openai_key"),
    (f"export OPENAI_API_KEY='{OPENAI_PROJECT_KEY}'", True, "openai_key"),
    (f"I rotated it, the new one is {OPENAI_SHORT_KEY}", True, "openai_key"),
    (f"curl -H 'x-api-key: {OPENAI_KEY}' https://api.example.com/v1/models", True, "openai_key"),
    (f"use {OPENAI_PROJECT_KEY} for the staging project", True, "openai_key"),
    (f"({OPENAI_SHORT_KEY})", True, "openai_key"),
    # github_token
    (f"git clone https://{GITHUB_PAT}@github.com/acme/repo.git", True, "github_token"),
    (f"GITHUB_TOKEN={GITHUB_PAT}", True, "github_token"),
    (f"the oauth app gave me {GITHUB_OAUTH}", True, "github_token"),
    (f"installation token: {GITHUB_SERVER}", True, "github_token"),
    (f"user-to-server token {GITHUB_USER} stopped working", True, "github_token"),
    (f"refresh with {GITHUB_REFRESH} please", True, "github_token"),
    (f"fine-grained PAT {GITHUB_FINE_GRAINED} has repo scope", True, "github_token"),
    (f"gh auth login --with-token <<< {GITHUB_PAT}", True, "github_token"),
    # slack_token
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", True, "slack_token"),
    (f"the bot posts with {SLACK_BOT} but gets not_in_channel", True, "slack_token"),
    (f"user token {SLACK_USER}", True, "slack_token"),
    (f"app token {SLACK_APP} from the manifest", True, "slack_token"),
    (f"refresh token: {SLACK_REFRESH}", True, "slack_token"),
    (f"I found {SLACK_SESSION} in the browser cookies", True, "slack_token"),
    # jwt
    (f"the API returns {JWT} after login", True, "jwt"),
    (f"token={JWT}", True, "jwt"),
    (f"can you decode this? {JWT}", True, "jwt"),
    (f'{{"id_token": "{JWT}"}}', True, "jwt"),
    (f"https://app.example.com/callback#access_token={JWT}&state=xyz", True, "jwt"),
    (f"unsigned one from the test server: {JWT_UNSIGNED}", True, "jwt"),
    # private_key
    (f"{pem('RSA ')}\nMIIEpAIBAAKCAQEAfakefakefake\n-----END RSA ...", True, "private_key"),
    (f"here is the deploy key:\n{pem('OPENSSH ')}\nb3BlbnNzaC1rZXktdjEAAAAA", True, "private_key"),
    (f"{pem()}\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", True, "private_key"),
    (f"ec key for the signer:\n{pem('EC ')}\nMHcCAQEEIFAKE", True, "private_key"),
    (f"{pem('ENCRYPTED ')}\nMIIFHDBOBgkqhkiG9w0BBQ0w", True, "private_key"),
    (f"{pem('DSA ')}\nMIIBuwIBAAKBgQ", True, "private_key"),
    (f"ssh_key: |\n  {pem('OPENSSH ')}\n  b3BlbnNzaC1rZXktdjE", True, "private_key"),
    # bearer_token
    ("Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0", True, "bearer_token"),
    (
        "curl -H 'Authorization: Bearer abcDEF1234567890xyzQRS' https://api.example.com",
        True,
        "bearer_token",
    ),
    ("headers = {'Authorization': 'Bearer tok_live_4f9a8b7c6d5e4f3a'}", True, "bearer_token"),
    ("the service wants Bearer 0123456789abcdef0123 on every call", True, "bearer_token"),
    ("authorization: bearer s3cr3tT0kenValue2024", True, "bearer_token"),
    ("Authorization: Basic YWxpY2U6aHVudGVyMjpmYWtl", True, "bearer_token"),
    ("Authorization: Token 1a2b3c4d5e6f7a8b9c0d", True, "bearer_token"),
    ("I send Bearer AbCdEfGhIjKlMnOpQrStUvWx and it says 403", True, "bearer_token"),
    # password
    ("my password is hunter2", True, "password"),
    ("password=hunter2", True, "password"),
    ('PASSWORD = "Tr0ub4dor&3"', True, "password"),
    ("DB_PASSWORD=s3cr3t-Pa55", True, "password"),
    ("passwd: correcthorsebatterystaple", True, "password"),
    ("pwd=Winter2024!", True, "password"),
    ("login: alice / pass: letmein123", True, "password"),
    ("client_secret=9d8c7b6a5f4e3d2c1b0a", True, "password"),
    ('{"username": "bob", "password": "qwerty!23"}', True, "password"),
    ("api_key = 'abcd-1234-efgh-5678'", True, "password"),
    ("The wifi password is BlueSky42, it's on the fridge", True, "password"),
    ("the password for the staging db is p@ssw0rd", True, "password"),
    ("I changed my password to Summer2023!", True, "password"),
    ("mysql -u root --password=RootPw99 -h db.internal", True, "password"),
    ("postgres://loom:s3cretPw@db.internal:5432/loom", True, "password"),
    ("secret: 7c1e4b2a9f", True, "password"),
    ("MYSQL_ROOT_PASSWORD: rootpass123", True, "password"),
    ("admin password: dragon", True, "password"),
    ("if password == 'opensesame':", True, "password"),
    ("my passcode is 738291 for the lockbox", True, "password"),
    ("password for wifi: GuestNet2024", True, "password"),
    # card_number
    ("my card is 4111 1111 1111 1111 exp 12/27", True, "card_number"),
    ("charge 4242-4242-4242-4242 please", True, "card_number"),
    ("card number: 5555555555554444", True, "card_number"),
    ("amex 3782 822463 10005, cvv 1234", True, "card_number"),
    ("use 6011 1111 1111 1117 for the discover test", True, "card_number"),
    ("JCB 3530 1113 3330 0000 expires 01/29", True, "card_number"),
    ("diners 30569309025904", True, "card_number"),
    ("new mastercard 2223 0031 2200 3222", True, "card_number"),
    ("4012 8888 8888 1881 12/26 123", True, "card_number"),
    ("visa 4222222222222 (the old 13-digit kind)", True, "card_number"),
    ("card 4000 0000 0000 0000 006 is the 19-digit one", True, "card_number"),
    ("pay with 5105-1051-0510-5100.", True, "card_number"),
    # ssn
    ("my SSN is 123-45-6789", True, "ssn"),
    ("SSN: 234 56 7890", True, "ssn"),
    ("social security number 512-34-5678, DOB 1990-04-12", True, "ssn"),
    ("ITIN 901-23-4567 was issued last year", True, "ssn"),
    ("ssn=345-67-8901", True, "ssn"),
    ("put 456-78-9012 on the W-9 form", True, "ssn"),
    ("Name: Jane Doe\nSSN 321-54-9876\nPhone: 415-555-0132", True, "ssn"),
    ("(SSN 987-65-4321)", True, "ssn"),
    # pin
    ("my PIN is 4921", True, "pin"),
    ("pin: 0000", True, "pin"),
    ("PIN code 123456", True, "pin"),
    ("the PIN for my debit card is 8402", True, "pin"),
    ("ATM pin 5739, don't tell anyone", True, "pin"),
    ("I set the SIM PIN to 24680", True, "pin"),
    ("PIN number: 19283746", True, "pin"),
    ("door pin = 7788", True, "pin"),
    ("my new pin is now 3141", True, "pin"),
    ("PIN 9051", True, "pin"),
    ("my pin's 4821", True, "pin"),
    # every Slack token kind, the rotated refresh, browser and cookie ones too
    (f"here is the slack refresh token {SLACK_ROTATED}", True, "slack_token"),
    (f"the browser session token is {SLACK_BROWSER}", True, "slack_token"),
    (f"cookie d={SLACK_COOKIE}", True, "slack_token"),
    # a card grouped as cards are written, whatever its issuer's first digit
    ("my card number is 9792 0000 1234 5677, expiry 04/29", True, "card_number"),
    ("UnionPay 8171 0000 1234 5670", True, "card_number"),
    ("RuPay card 8200 0000 1234 5675", True, "card_number"),
    ("UATP 1200 0000 1234 561", True, "card_number"),
    # an SSN named one, its digits unseparated
    ("My SSN is 123456789", True, "ssn"),
    ("SSN: 123456789", True, "ssn"),
    ("social security number 219099999", True, "ssn"),
    # adversarial: what once made a detector read its text again and again, then a real shape
    ("pin " * 5_000 + "my PIN is 4921", True, "pin"),
    ("my PIN is" + " " * 20_000 + "4921", True, "pin"),
    ("password=" + "\t" * 20_000 + "hunter2", True, "password"),
    ("password is" + " " * 20_000 + "Tr0ub4dor", True, "password"),
    ("xoxb-" * 4_000 + " " + SLACK_BOT, True, "slack_token"),
    ("a" * 20_000 + "://" + " postgres://loom:s3cretPw@db.internal/loom", True, "password"),
    ("1 " * 10_000 + "4111 1111 1111 1111", True, "card_number"),
    ("123-45- " * 2_000 + "my SSN is 123-45-6789", True, "ssn"),
    ("sk-" + "a-" * 10_000 + " " + OPENAI_KEY, True, "openai_key"),
    (
        "bearer " * 3_000 + "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        True,
        "bearer_token",
    ),
    ("password=" + "_" * 20_000 + "%x", True, "password"),
    ("password=" + "a_" * 10_000 + "%x", True, "password"),
    # more candidates than the guard judges one by one: what it did not judge may hold one
    ("".join(f"password=<v{i}> " for i in range(4_000)), True, "too_many_candidates"),
    ("".join(f"pin {i:04d} " for i in range(4_000)), True, "too_many_candidates"),
    ("password=null " * 3_000, True, "too_many_candidates"),
]

NEGATIVES: list[tuple[str, bool]] = [
    # phone numbers
    ("call me at +1 (415) 555-0132", False),
    ("my number is 415-555-0132", False),
    ("UK office: +44 20 7946 0958", False),
    ("text 415 555 0132 when you land", False),
    ("toll free 1-800-555-0199", False),
    ("Berlin: +49 30 901820", False),
    ("Paris +33 1 42 68 53 00", False),
    ("Tokyo +81 3-1234-5678", False),
    ("Sydney +61 2 9374 4000", False),
    ("India +91 98765 43210", False),
    ("Beijing +86 138 0013 8000", False),
    ("São Paulo +55 11 91234-5678", False),
    ("dial 0044 20 7946 0958 from abroad", False),
    ("+1.415.555.0132 is the fax", False),
    ("Dublin +353 1 234 5678", False),
    ("reach support at (212) 555-0187 ext. 4021", False),
    # uuids and hashes
    ("request id 550e8400-e29b-41d4-a716-446655440000 failed", False),
    ("thread_id: f47ac10b-58cc-4372-a567-0e02b2c3d479", False),
    ("uuid 123e4567-e89b-12d3-a456-426614174000", False),
    ("the run 12345678-1234-5678-1234-567812345678 is stuck", False),
    ("fixed in a1b2c3d", False),
    ("git checkout 3f786850e387550fdab836ed7e6dc881de23001b", False),
    ("revert commit 9fceb02 please", False),
    ("sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", False),
    ("git cherry-pick 1234567 then rebase", False),
    # dates and times
    ("the meeting is on 2024-01-15", False),
    ("deployed at 2024-01-15T10:30:00Z", False),
    ("15/01/2024 10:30 works for me", False),
    ("January 15, 2024 at 3:45 PM", False),
    ("log file app-20240115103045.log", False),
    ("timestamp 20240115103045 in the filename", False),
    ("epoch millis 1705312245000", False),
    ("Mon, 15 Jan 2024 10:30:00 +0000", False),
    ("between 2023-12-31 and 2024-01-01 23:59:59", False),
    ("the 3rd of March 2025, 09:00-17:30", False),
    # order / tracking numbers and other long numbers that are not cards
    ("order 4111 1111 1111 1112 is delayed", False),
    ("order #4502330199872239", False),
    ("tracking 5555 5555 5555 4445", False),
    ("reference 1234567890123", False),
    ("invoice 4716-2345-6789-0123 is overdue", False),
    ("parcel 9400 1000 0000 0000 0000 00 arrived", False),
    ("UPS 1Z999AA10123456784", False),
    ("FedEx 7749 1234 5678", False),
    ("account 5412751234123456 in the ledger (old format)", False),
    ("ticket 0000 0000 0000 0000 is a placeholder", False),
    ("Temperature readings: 4321 4322 4323 4324 4325", False),
    ("open ports 5432 6379 8080 9200 3000 on the box", False),
    ("Zoom meeting ID 845 1234 5678", False),
    ("ISBN 978-3-16-148410-0", False),
    ("IBAN DE89 3704 0044 0532 0130 00", False),
    # ip addresses and ports
    ("ssh into 192.168.1.100", False),
    ("the db is at 10.0.0.12:5432", False),
    ("ipv6 2001:0db8:85a3:0000:0000:8a2e:0370:7334", False),
    ("block 203.0.113.0/24", False),
    # versions
    ("upgrade to v1.2.3", False),
    ("Python 3.11.7 on linux", False),
    ("numpy==2.4.6 and pandas>=2.2.0", False),
    ("Windows build 10.0.19045.3803", False),
    ("chrome 120.0.6099.129 crashes", False),
    # prices and quantities
    ("it costs $1,299.99", False),
    ("€49.00 per month", False),
    ("we spent 2,499 USD on tokens", False),
    ("Day pass: $20", False),
    ("revenue was 12,345,678.90 last quarter", False),
    # prose about passwords, tokens, keys and PINs
    ("reset your password via the link", False),
    ("I forgot my password again", False),
    ("The password is case sensitive", False),
    ("Make sure your password is at least 12 characters long", False),
    ("Your password was changed yesterday.", False),
    ("Password: reset it from the settings page", False),
    ("password: required", False),
    ("the password is wrong", False),
    ("my password is too short", False),
    ("the password was compromised.", False),
    ("use an API key from the console", False),
    ("API key: use the one from the console", False),
    ("the PIN pad was broken", False),
    ("Enter your PIN at the terminal", False),
    ("The PIN must be 4 to 8 digits", False),
    ("PIN: enter 4 digits", False),
    ("Pin 2024 goals to the board", False),
    ("connect the LED to pin 13", False),
    ("GPIO pin: 17", False),
    ("the PIN changed in 2023", False),
    ("your token expires in 3600 seconds", False),
    ("max_tokens: 4096", False),
    ("tokens: 512", False),
    ("the secret to good bread is patience", False),
    ("Top secret: the launch date moves", False),
    ("The key to success is consistency", False),
    ("set api_key in config.yaml", False),
    ("pass: the ball to the left wing", False),
    ("my boarding pass: gate B22, seat 14C", False),
    ("a passphrase of four random words is easier to remember", False),
    ("password for the new account: reset it from settings", False),
    ("Passwords: 3 attempts left", False),
    ("Your PIN is 4 digits long", False),
    ("Secret: 42", False),
    ("The secret is out", False),
    ("cd ~ && pwd", False),
    # placeholders, templates and code that names a secret without holding it
    ("password: ********", False),
    ("PASSWORD=<your password here>", False),
    ("DB_PASSWORD=${DB_PASSWORD}", False),
    ("api_key = os.environ['OPENAI_API_KEY']", False),
    ("password = getpass.getpass()", False),
    ("conn = connect(user=user, password=password)", False),
    ("def login(username: str, password: str) -> bool:", False),
    ("password: Optional[str] = None", False),
    ('{"password": ""}', False),
    ("password = None", False),
    ("api_key: null", False),
    ("api_key: YOUR_API_KEY_HERE", False),
    ("password=$DB_PASS", False),
    ("secret_key = settings.SECRET_KEY", False),
    ("password: {{ .Values.db.password }}", False),
    ("psql postgres://user:<password>@localhost/db", False),
    ("pwd: /home/alice/projects", False),
    ("token = request.headers.get('Authorization')", False),
    # bearer in prose or as a template
    ("Authorization: Bearer <token>", False),
    ("Authorization: Bearer YOUR_ACCESS_TOKEN", False),
    ("I hate to be the bearer of bad news", False),
    ("Bearer tokens are sent in the Authorization header", False),
    ("the bearer authentication scheme is simple", False),
    ("ring bearer duties at the wedding", False),
    ("send the Bearer token, not the cookie", False),
    # sk- in ordinary words
    ("pip install scikit-learn, people call it sk-learn", False),
    ("task-sk-1 failed on the runner", False),
    ("the sk-learn pipeline is slow", False),
    ("sk-learn-compatible-estimators-for-beginners", False),
    ("ask-me-anything-thread-2024-edition", False),
    # lookalikes of other kinds
    ("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEF", False),
    ("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE", False),
    ("AKIA is the prefix of an access key id", False),
    ("ghp_ tokens are classic PATs", False),
    ("xoxo, see you soon", False),
    ("love you, xoxo-see-you-in-2025", False),
    ("xoxo-summer-2024 was the best trip", False),
    ("the header starts with eyJ because it is base64 JSON", False),
    ("SSN 000-12-3456 is never issued", False),
    ("SSN 666-12-3456 is never issued", False),
    ("123-00-4567 has a zero group", False),
    ("123-45-0000 has a zero serial", False),
    ("room 12-345-6789 in building B", False),
    # scores and shares after "pass", as test runs print them
    ("Unit tests, pass: 15/15", False),
    ("PASS: 12/12 tests", False),
    ("Q3 pass: 87%", False),
    ("Run 1: pass: 15/15", False),
    # nine digits not named an SSN, or named one but never issued; a 1xxx run unbroken
    ("order 123456789 shipped", False),
    ("ssn 000123456 is a test value", False),
    ("event at 1717171717171 ms", False),
    # adversarial: each of these took seconds to minutes to judge at 20 KB before the guard
    # read in linear time; each is judged in about the time of prose of its length
    ("pin" + " " * 20_000, False),
    ("pin" + "\n" * 20_000 + "pin", False),
    ("password=" + "\t" * 20_000, False),
    ("password is" + " " * 20_000, False),
    ("xoxb-" * 4_000, False),
    ("xoxb-" + "a" * 20_000, False),
    ("a" * 20_000 + "://", False),
    ("x://" + "u:" * 10_000, False),
    ("1 " * 10_000 + "1x", False),
    ("1-" * 10_000, False),
    ("sk-" + "a-" * 10_000, False),
    ("-----BEGIN " + "A " * 10_000 + "PRIVATE KEY", False),
    ("bearer" + " " * 20_000 + "PIN", False),
    ("authorization" + " " * 20_000 + ":", False),
    ("ssn" + " " * 20_000 + "123", False),
    ("social" + " " * 20_000 + "security", False),
    ("password for" + " x" * 10_000, False),
    ("eyJ" + "a" * 20_000, False),
    ("1111111111111 " * 1_500, False),
    # candidates fewer than one in 32 characters: structured text that names secrets
    ('{"id": 1, "api_key": null, "owner": "team-3"}, ' * 2_000, False),
    # candidates that cost nothing to set aside: numbers no card begins with, lists of them
    ("".join(f"{1_700_000_000_000 + i} INFO request served\n" for i in range(3_000)), False),
]

CORPUS: list[tuple[str, bool] | tuple[str, bool, str]] = [*POSITIVES, *NEGATIVES]


def test_corpus_has_full_recall_and_no_false_positives():
    """GIVEN the labelled corpus WHEN each text is judged THEN recall is 100% and FP rate 0%."""
    positives = [case for case in CORPUS if case[1]]
    negatives = [case for case in CORPUS if not case[1]]
    missed = [case[0] for case in positives if not is_sensitive(case[0])]
    false_alarms = [(case[0], high_shapes(case[0])) for case in negatives if is_sensitive(case[0])]
    recall = 1 - len(missed) / len(positives)
    fp_rate = len(false_alarms) / len(negatives)
    print(
        f"\nsensitivity corpus: {len(CORPUS)} cases ({len(positives)} positive, "
        f"{len(negatives)} negative); recall {recall:.1%}, false-positive rate {fp_rate:.1%}"
    )
    assert recall == 1.0 and fp_rate == 0.0, f"missed: {missed!r}\nfalse alarms: {false_alarms!r}"


def test_corpus_is_large_and_covers_every_kind():
    """GIVEN the corpus THEN it holds >= 200 cases, >= 90 positive, >= 110 negative, every kind."""
    assert len(CORPUS) >= 200 and len(POSITIVES) >= 90 and len(NEGATIVES) >= 110
    assert {kind for _, _, kind in POSITIVES} == set(KINDS)


@pytest.mark.parametrize("text,kind", [(text, kind) for text, _, kind in POSITIVES])
def test_each_positive_case_reports_its_labelled_kind(text: str, kind: str):
    """GIVEN a text labelled with a kind WHEN its shapes are listed THEN that kind is among them."""
    assert kind in high_shapes(text)


def test_high_shapes_lists_each_kind_once_in_stable_order():
    """GIVEN every detector's kind twice in one text
    WHEN listed THEN each appears once, in order."""
    shapes = [(text, kind) for text, _, kind in POSITIVES if kind != TOO_MANY_CANDIDATES]
    one_of_each = " | ".join(text for text, _ in shapes)
    assert high_shapes(one_of_each + "\n" + one_of_each) == [
        kind for kind in KINDS if kind != TOO_MANY_CANDIDATES
    ]


def test_a_text_of_too_many_candidates_reads_as_high_after_those_it_judged():
    """GIVEN an AWS key, a card, then more different values after "password=" than the guard
    judges one by one
    WHEN judged
    THEN the key (judged before the values) is named, then too_many_candidates, and nothing
    after: the card is never reached. The same values, fewer than the budget, read as nothing.
    """
    values = "".join(f"password=<v{i}> " for i in range(4_000))
    text = f"{AWS_KEY} card 4111 1111 1111 1111 {values}"

    assert high_shapes(text) == ["aws_key", TOO_MANY_CANDIDATES]
    assert high_shapes(values) == [TOO_MANY_CANDIDATES]
    assert is_sensitive(values[:2_000]) is False


def test_plain_text_has_no_shapes():
    """GIVEN prose with no secret WHEN judged THEN no kind is reported and it is not high."""
    text = "Let's meet at 10:30 on 2024-01-15; call +1 (415) 555-0132 if you're late."
    assert high_shapes(text) == [] and is_sensitive(text) is False


@pytest.mark.parametrize(
    "text",
    ["Unit tests, pass: 15/15", "PASS: 12/12 tests", "Q3 pass: 87%", "Pass: 100%", "pass: 99.5%"],
)
def test_a_score_after_pass_is_no_password(text: str):
    """A test run's "pass: 15/15" or "pass: 87%" is a score: transcripts of coding agents are
    full of them, and a turn that reads as high is never searched."""
    assert high_shapes(text) == []


def test_luhn_valid_card_is_flagged_and_one_changed_digit_is_not():
    """GIVEN a Luhn-valid card WHEN one digit changes THEN only the original reads as a card."""
    valid, changed = "4539 1488 0343 6467", "4539 1488 0343 6468"
    assert "card_number" in high_shapes(f"card {valid}")
    assert "card_number" not in high_shapes(f"card {changed}")


@pytest.mark.parametrize("area", ["000", "666"])
def test_ssn_with_never_issued_area_is_rejected(area: str):
    """GIVEN an SSN shape whose area is 000 or 666 THEN it is not reported as an SSN."""
    assert "ssn" not in high_shapes(f"SSN {area}-12-3456")


def test_ssn_with_area_9xx_is_still_flagged():
    """GIVEN an SSN shape in the 9xx area (ITIN range) THEN it is reported."""
    assert high_shapes("SSN 912-34-5678") == ["ssn"]


def test_pin_needs_four_to_eight_digits():
    """GIVEN a stated PIN WHEN it has 3 or 9 digits THEN it is not a PIN; 4 and 8 digits are."""
    assert not is_sensitive("my PIN is 492")
    assert not is_sensitive("my PIN is 123456789")
    assert high_shapes("my PIN is 4921") == ["pin"]
    assert high_shapes("my PIN is 12345678") == ["pin"]


SHOWN = 240
FILLER = "we talked about the roadmap and the weekly sync. " * 60


def text_with_key_at(position: int) -> str:
    """Plain filler with a fake AWS key starting at the given character position."""
    return FILLER[: position - 1] + " " + AWS_KEY + " and then more talk."


def test_excerpt_flags_a_key_within_the_lookahead():
    """GIVEN a key 1,000 characters past the shown excerpt WHEN it is checked THEN high."""
    text = text_with_key_at(SHOWN + 1000)
    assert text.index(AWS_KEY) == SHOWN + 1000 and is_sensitive(FILLER) is False
    assert is_sensitive_excerpt(text, SHOWN) is True


def test_excerpt_ignores_a_key_beyond_the_lookahead():
    """GIVEN a key 1,100 characters past the shown excerpt WHEN it is checked THEN not high."""
    text = text_with_key_at(SHOWN + 1100)
    assert text.index(AWS_KEY) == SHOWN + 1100 and is_sensitive(text) is True
    assert is_sensitive_excerpt(text, SHOWN) is False


def test_an_excerpt_whose_cut_makes_a_card_number_reads_as_high():
    """GIVEN a text whose 240-character cut ends in a Luhn-valid card number that is part of a
    longer digit run (neither the whole text nor its first 1,264 characters read as high)
    WHEN its excerpt is checked THEN high: the excerpt shown is checked as cut."""
    text = "a" * 223 + " " + "4111111111111111" + "12345678" + " more words"
    assert not is_sensitive(text) and is_sensitive(text[:SHOWN])
    assert is_sensitive_excerpt(text, SHOWN) is True


def test_excerpt_lookahead_can_be_narrowed():
    """GIVEN a key 100 characters past the excerpt WHEN the lookahead is 50 THEN it is not seen."""
    text = text_with_key_at(SHOWN + 100)
    assert is_sensitive_excerpt(text, SHOWN, lookahead=50) is False
    assert is_sensitive_excerpt(text, SHOWN, lookahead=200) is True


def test_a_cut_that_makes_a_shape_reads_as_high_where_it_is_embedded():
    """GIVEN five groups of four digits (no card) placed so that a 40-character cut keeps four
    WHEN the text is checked whole and as embedded from its first 40 characters
    THEN it does not read as high whole; it does as embedded, and so does a text high whole."""
    text = "the reference is now " + "4111 1111 1111 1111 1111" + " as agreed"
    assert is_sensitive(text) is False and is_sensitive(text[:40]) is True
    assert is_sensitive_embedded(text, 40) is True
    assert is_sensitive_embedded(text, 2048) is False
    assert is_sensitive_embedded("card 4111 1111 1111 1111 " + "x" * 50, 10) is True


def _ungated(text: str) -> list[str]:
    reading = sensitivity._Reading(text)
    kinds = []
    for kind, _, _, found in sensitivity._DETECTORS:
        try:
            if found(reading):
                kinds.append(kind)
        except sensitivity._TooManyCandidates:
            return [*kinds, TOO_MANY_CANDIDATES]
    return kinds


@pytest.mark.parametrize("case", ["as written", "upper", "lower", "title"])
def test_the_literal_gates_never_hide_a_shape(case: str):
    """GIVEN every corpus text, in several letter cases
    WHEN judged with each detector's literal gate and with every detector run
    THEN both find the same kinds: a gate only skips texts a detector could not match."""
    change = {
        "as written": str,
        "upper": str.upper,
        "lower": str.lower,
        "title": str.title,
    }[case]
    texts = [change(text) for text, *_ in CORPUS]
    assert any(_ungated(t) for t in texts)
    for text in texts:
        assert high_shapes(text) == _ungated(text), text


@pytest.mark.parametrize(
    "before",
    ["\u212a", "\u0130\u0130\u0130 ", "\u212a\u0130 "],
    ids=["kelvin sign", "i with dot above", "both"],
)
def test_characters_whose_lower_case_is_ascii_neither_hide_nor_shift_a_shape(before: str):
    """GIVEN a password assignment and a PIN after KELVIN SIGN (lower case "k") or I WITH DOT
    ABOVE (lower case two characters)
    WHEN judged THEN both are found, as they are without them: the case-blind patterns read the
    folded text, whose characters stand where the text's do and none turns into an ASCII letter.
    """
    text = before + "password=hunter2 and my PIN is 4921"

    assert high_shapes(text) == ["password", "pin"]
    assert high_shapes(before + "password=null") == []
