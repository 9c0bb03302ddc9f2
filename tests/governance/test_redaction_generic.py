"""governance/redaction/generic.py and the general rules beside it: what a text says a value is, and what it
says a value is not. Every value here is made up for the test (none is a live credential); documented
public examples (AWS's `…EXAMPLE` keys, processors' test cards) are quoted as their vendors publish them.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from governance.redaction import PLACEHOLDER, redact
from governance.redaction.prose import credential_prose
from tests.governance.gitleaks_shapes import RULES as GITLEAKS
from tests.governance.redaction_eval import Sample, leftovers
from tests.governance.test_redaction_catalogue import _gitleaks_sample

RANDOM = "Q7R3ZT5XW2MNB4KDa8Fh2kLm3Nq8"  # 28 characters of a random-looking token
PASSWORD = "Qw7!rTz9#Lp2"


def _gone(text: str, secret: str) -> str:
    out = redact(text).text
    assert secret not in out and PLACEHOLDER in out, (text, out)
    return out


def _kept(text: str) -> None:
    assert redact(text).text == text


def _wif(payload: bytes) -> str:
    """Base58Check of version 0x80 and `payload` (the Wallet Import Format)."""
    body = b"\x80" + payload
    raw = body + hashlib.sha256(hashlib.sha256(body).digest()).digest()[:4]
    number = int.from_bytes(raw, "big")
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = alphabet[digit] + out
    return out


def test_near_word_random_token_after_the_word_is_redacted() -> None:
    out = _gone(f"storage account key1: {RANDOM}", RANDOM)
    assert out.startswith("storage account key1: ")


def test_near_word_random_token_before_the_word_is_redacted() -> None:
    _gone(f"client = init('{RANDOM}')  # the admin key", RANDOM)


def test_near_word_token_alone_under_a_line_naming_it_is_redacted() -> None:
    _gone(f"Here is the access token:\n{RANDOM}\n", RANDOM)


@pytest.mark.parametrize(
    "text",
    [
        f"public key: {RANDOM}",
        f"idempotency key {RANDOM}",
        f"trace_id={RANDOM} auth=ok",
        "commit 9f2c4e1a7b3d5f60812a4c6e8b0d2f4a6c8e0b1d fixes the token refresh race",
        "Reverted 9f2c4e1a7b3d5f60812a4c6e8b0d2f4a6c8e0b1d which broke the token cache",
        "Stripe request req_Q7R3ZT5XW2MNB4 failed: invalid API key",
        "PGP key 0x3AA5C34371567BD2",
        "github.com/99designs/keyring v1.2.2 h1:pZd3neh/EmUzWONb35LxQfvuY7kiSXAq3HQd97+XBn0=",
        "the signing key lives in src/governance/redaction/catalogue_keys.py",
    ],
)
def test_near_word_ids_digests_and_public_keys_are_kept(text: str) -> None:
    _kept(text)


def test_base64_of_words_is_kept_under_an_ambiguous_name() -> None:
    _kept("token: " + base64.b64encode(b'{"logLevel": "info", "region": "eu"}').decode())


def test_base64_of_a_credential_pair_is_redacted() -> None:
    encoded = base64.b64encode(b"bot:Zx8qLm2Vb7!Qz").decode()
    _gone(f'{{"auths": {{"registry.example.com": {{"auth": "{encoded}"}}}}}}', encoded)


def test_positional_credentials_in_a_call_are_redacted() -> None:
    out = _gone(f"$pdo = new PDO('mysql:host=db;dbname=shop', 'shop', '{PASSWORD}');", PASSWORD)
    assert "'shop'" in out


def test_pgpass_line_password_is_redacted() -> None:
    out = _gone(f"db.internal:5432:app:alice:{PASSWORD}", PASSWORD)
    assert out.startswith("db.internal:5432:app:alice:")


def test_oracle_user_slash_password_is_redacted() -> None:
    _gone(f"jdbc:oracle:thin:scott/{PASSWORD}@//ora.example.com:1521/PDB1", PASSWORD)


def test_directive_line_password_is_redacted() -> None:
    _gone(f"bind 0.0.0.0\nrequirepass {PASSWORD}\n", PASSWORD)


def test_directive_shaped_prose_line_is_kept() -> None:
    _kept("Passwort vergessen?")


def test_ldap_bind_password_is_redacted() -> None:
    _gone(f"ldapsearch -x -D cn=admin,dc=example,dc=com -w {PASSWORD} -H ldap://dir", PASSWORD)


def test_bcrypt_hash_is_redacted() -> None:
    digest = "$2y$10$0ZgbZxSgIuXsNG6pRMRkfVXiep/0XTePQctMZhJSTaSCuBUQm3EC6"
    _gone(f"admin:{digest}", digest)


@pytest.mark.parametrize("text", ["Card PIN 7391", "CVV: 291", "Bank PIN for the corporate card: 7391"])
def test_pin_and_cvv_after_their_word_are_redacted(text: str) -> None:
    digits = text.rsplit(" ", 1)[-1]
    _gone(text, digits)


def test_short_numbers_without_their_word_are_kept() -> None:
    _kept("GPIO pin 13 drives the LED; retry 3 times")


def test_wif_with_a_valid_checksum_is_redacted() -> None:
    key = _wif(hashlib.sha256(b"loregate test key").digest() + b"\x01")
    _gone(f"WIF: {key}", key)


def test_wif_shape_with_a_bad_checksum_is_kept() -> None:
    key = _wif(hashlib.sha256(b"loregate test key").digest() + b"\x01")
    wrong = key[:-1] + ("2" if key[-1] != "2" else "3")
    _kept(f"Listing {wrong} from the example")


def test_wifi_qr_password_is_redacted() -> None:
    out = _gone(f"WIFI:T:WPA;S:AcmeGuest;P:{PASSWORD};;", PASSWORD)
    assert "S:AcmeGuest" in out


def test_value_before_the_word_password_is_redacted() -> None:
    _gone(f"Use {PASSWORD} as the password for staging", PASSWORD)


def test_yaml_block_scalar_password_is_redacted() -> None:
    _gone(f"database:\n  password: >-\n    {PASSWORD}\n  host: db\n", PASSWORD)


def test_powershell_secure_string_is_redacted() -> None:
    _gone(f'$pw = ConvertTo-SecureString "{PASSWORD}" -AsPlainText -Force', PASSWORD)


def test_token_alone_in_url_userinfo_is_redacted() -> None:
    token = "4f9c2b7e1a3d5f60812a4c6e8b0d2f4a6c8e0b1d"
    _gone(f"git clone https://{token}@github.com/acme/repo.git", token)


def test_shell_continuation_secret_is_redacted() -> None:
    text = "export AWS_SECRET_ACCESS_KEY=\\\n  FJXHcJizlG8HjiSxymIm\\\n7E1MVoVuT74954nwRD/X\n"
    out = redact(text).text
    assert "FJXHcJizlG8HjiSxymIm" not in out and "7E1MVoVuT74954nwRD/X" not in out


def test_subscript_assignment_is_redacted() -> None:
    value = "2f86dc28b9d51445723ddd43857ab74da91960d0bfb344f5fead8c6586209f4b"
    _gone(f"app.config['SECRET_KEY'] = '{value}'", value)


def test_ampersand_inside_a_value_stays_in_it() -> None:
    _gone("--extra-vars 'ansible_become_pass=6N6Y&ADb23rdCgB6'", "ADb23rdCgB6")


@pytest.mark.parametrize(
    "text",
    [
        f"A senha do banco é {PASSWORD}",
        f"La password del server è {PASSWORD}",
        f"Пароль: {PASSWORD}",
        f"密码是{PASSWORD}",
        f"パスワードは{PASSWORD}です",
        f"Le mot de passe de la base est « {PASSWORD} ».",
        f"usuário admin, senha {PASSWORD}",
        f"Zugriffstoken: {RANDOM}",
    ],
)
def test_prose_in_other_languages_is_redacted(text: str) -> None:
    _gone(text, PASSWORD if PASSWORD in text else RANDOM)


@pytest.mark.parametrize(
    "text",
    [
        "la contraseña de la base de datos de producción es Xq7!pLm2Zr y el usuario es admin",
        "a senha do banco de dados de produção é Xq7!pLm2Zr",
        "le mot de passe de la base de données de production est Xq7!pLm2Zr",
        "la password del database di produzione è Xq7!pLm2Zr",
        "la contraseña de la cuenta de administrador del servidor de producción es Xq7!pLm2Zr",
        "La contraseña del usuario root de la base de datos es: Xq7!pLm2Zr",
    ],
)
def test_password_named_after_a_chain_of_romance_prepositions_is_redacted(text: str) -> None:
    # "de la base de datos de producción": articles and prepositions do not use up the few words allowed
    # between the word and its verb
    out = _gone(text, "Xq7!pLm2Zr")
    assert out.startswith(text[:12]), out  # the words before the value stay


@pytest.mark.parametrize(
    "text",
    [
        "la contraseña de la base de datos de producción es demasiado corta",
        "la contraseña de la base de datos de producción es obligatoria",
        "la contraseña de la base de datos de producción es la misma que en staging",
        "la contraseña de la base de datos de producción debe tener 12 caracteres",
        "a senha do banco de dados de produção é obrigatória",
        "le mot de passe de la base de données de production est trop court",
        "la password del database di produzione è scaduta",
    ],
)
def test_words_after_a_long_romance_password_phrase_are_kept(text: str) -> None:
    _kept(text)


@pytest.mark.parametrize(
    "text",
    [
        "The AWS docs use AKIAIOSFODNN7EXAMPLE as the example access key id.",
        "example secret: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (from the CLI guide)",
        "Use the test card 4242 4242 4242 4242 in Stripe's test mode.",
        "Stripe publishable key: pk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFGH",
    ],
)
def test_vendors_published_examples_and_public_keys_are_kept(text: str) -> None:
    _kept(text)


@pytest.mark.parametrize(
    "text",
    [
        "DATABASE_URL=postgres://user:password@localhost:5432/db",
        "redis://:${REDIS_PASSWORD}@redis:6379/0",
        "mongodb://<username>:<password>@cluster0.example.net/test",
        "aws_secret_access_key = <your secret key>",
        'token = ENV.fetch("GITHUB_TOKEN")',
        "Authorization: Bearer ACCESS_TOKEN",
        "db_password: op://Prod/Postgres/password",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-password-AbCdEf",
    ],
)
def test_placeholders_and_references_are_kept(text: str) -> None:
    _kept(text)


def _iban(country: str, bban: str) -> str:
    """An IBAN with its ISO 13616 check digits computed for `bban`."""
    digits = "".join(str(int(char, 36)) for char in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


def test_ibans_are_redacted_whole_or_grouped_when_their_check_holds() -> None:
    iban = _iban("ES", "82565827127290336693")
    grouped = " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
    _gone(f"Datos bancarios: {grouped}", grouped[5:])
    _gone(f"Überweisung an {iban} bitte bis Freitag", iban)
    out = _gone(f"IBAN {grouped} BIC CAIXESBBXXX", grouped[5:])
    assert out.endswith("BIC CAIXESBBXXX")
    broken = iban[:4] + ("1" if iban[4] != "1" else "2") + iban[5:]
    _kept(f"Test fixture (not a real account): {broken}")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Checking account #: 000123456789 (routing 021000021)", "000123456789"),
        ("Kontonummer 1234567890, BLZ 37040044", "1234567890"),
    ],
)
def test_bank_account_numbers_on_a_bank_line_are_redacted(text: str, secret: str) -> None:
    out = _gone(text, secret)
    assert "021000021" in out or "37040044" in out  # routing numbers and bank codes are public


def test_an_account_id_with_no_bank_on_its_line_is_kept() -> None:
    _kept("Deployed to AWS account 123456789012 in us-east-1")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"define( 'DB_PASSWORD', '{PASSWORD}' );", PASSWORD),
        (f"define( 'AUTH_KEY', '{RANDOM}' );", RANDOM),
        (f'config.set("api_secret", "{RANDOM}")', RANDOM),
        (f"CREATE USER 'grafana'@'%' IDENTIFIED BY '{PASSWORD}';", PASSWORD),
        (f"ALTER USER app IDENTIFIED WITH caching_sha2_password BY '{PASSWORD}';", PASSWORD),
        (f"CREATE LOGIN app WITH PASSWORD = N'{PASSWORD}';", PASSWORD),
        (f'DriverManager.getConnection("jdbc:oracle:thin:@db:1521/ORCL", "scott", "{PASSWORD}");', PASSWORD),
        (f'const t = jwt.sign(payload, "{PASSWORD}", {{ expiresIn: "1h" }});', PASSWORD),
        (f"crypto.createHmac('sha256', '{PASSWORD}').update(body)", PASSWORD),
        (f"net use Z: \\\\srv\\share /user:CORP\\bob {PASSWORD} /persistent:no", PASSWORD),
        (f'network={{\n    ssid="Office"\n    psk="{PASSWORD}"\n}}', PASSWORD),
        (f"accounts: ['0x{'3f' * 32}']", "3f" * 32),
        ("Recovery phrase (keep offline!): uncover abandon harvest pepper brisk acoustic", "harvest pepper"),
        (f"fyi the pw is {PASSWORD}", PASSWORD),
    ],
)
def test_credentials_named_by_their_syntax_are_redacted(text: str, secret: str) -> None:
    _gone(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "define( 'DB_USER', 'wordpress' );",
        "define( 'WP_DEBUG', false );",
        'translate("password", "Password")',
        "CREATE USER app IDENTIFIED BY '${APP_PASSWORD}';",
        "crypto.createHmac('sha256', process.env.WEBHOOK_SECRET)",
        "net use Z: \\\\srv\\share * /user:CORP\\bob",
        f"tx hash 0x{'3f' * 32} in block 19000000",
        "POSTGRES_PASSWORD=${POSTGRES_PASSWORD:?set it in .env}",
        "Wpisz hasło to konto",
        "Het wachtwoord is verlopen",
    ],
)
def test_names_and_references_beside_those_syntaxes_are_kept(text: str) -> None:
    _kept(text)


@pytest.mark.parametrize(
    "text",
    [
        f"Yönetici parolası: {PASSWORD}",
        f"सर्वर का पासवर्ड {PASSWORD} है",
        f"كلمة المرور هي {PASSWORD}",
        f"Mật khẩu quản trị là {PASSWORD}",
        f"Hasło do serwera to {PASSWORD}",
        f"Het wachtwoord is {PASSWORD}",
        f"Lösenordet är {PASSWORD}",
    ],
)
def test_prose_in_more_languages_is_redacted(text: str) -> None:
    _gone(text, PASSWORD)


def test_a_date_after_account_on_a_bank_line_is_kept() -> None:
    _kept("account 20240101 opened at the bank branch")


# Ids, not credentials: prose with UUIDs and short ids whose words say what they are (a request, a run, a key
# id, a client id, an idempotency key, an order), in English and other languages, some beside a word that
# elsewhere names a secret. Written before the rule for prose naming a credential, which must keep them all.
ID_SENTENCES = [
    "the request id is 5b91250c-bb74-4a62-8f63-cb52956100c0",
    "The run's UUID is 3dfdd062-7a6d-4ca8-9a27-3b11c5d04e5b; rerun it after the fix.",
    "the key id is 7b0ca435-4156-45b2-898a-29a3a7f1c5a0 for the signing key",
    "client id 826753198340077912, redirect to /callback",
    "The OAuth client id is 0oa1b2c3d4e5f6g7h8i9 for the staging app.",
    "the idempotency key was 44e78985-7602-4742-9605-dc4543d7f8dd when the charge was retried",
    "the order number is 1677187044367432",
    "The API key ID is 19376a3a-a83d-45d1-8c7b-994dc5525cb0 (the key itself stays in the vault).",
    "The token's request id was d74d7e30-75b8-460c-8897-f6e5bd528704.",
    "the request id for the token call is 2ec430f5-64b0-45e6-b97d-dc270dd98600",
    "the credential id is 779adb40-b59a-4bed-a353-1fb748e2443d; rotate it from the console",
    "The publishable key is yb1slrkk3imnwp8bi and is safe to ship in the browser bundle.",
    "the public key fingerprint is 4909eaf88f7f10a3624b58a5ce8dfd7a",
    "the secret's name is prod-db-2 in the cluster",
    "The trace id was 68ff47ba-4889-4115-9172-aa5e13692275 when the token refresh failed.",
    "the job uuid is af1d1458-cb34-450c-95b3-4eda104af311",
    "the account id is 123456789012 and the region eu-west-1",
    "the ticket number is 5700538572417965",
    "Workspace id: bd0f852b-466d-42d8-8d27-05bb0dac270a (secrets are managed per workspace).",
    "the session id is 6e70fbf9-4690-4c52-b823-b28b2aadf000 in the logs",
    "the token's key id is 26c8bee9-eacf-46dd-9bb7-125adf9e95b0",
    "the app id is 1quiziwh4bmepq52bt5zvdmx and the client id is u78nrgkxrt6mo4",
    "The correlation id is 0329b996-a83e-4ecd-8564-962856bcc0e6 for the password reset request.",
    "the installation id is 9877xqg8a9cxua for the GitHub app",
    "The secret version is 3 and its id is e2027338-43bc-4c0e-8d56-72863a6793d5.",
    "The invoice number was 20240115000123 and the API key was rotated the same day.",
    "the customer id is cus9x8w7v6u5t4 and the credit note number is 7391",
    "the deployment id is f386aa20-48d7-498a-a90a-54efeb97dfed",
    # German, Spanish, French, Portuguese, Italian
    "Die Anfrage-ID ist 5f8rd3rgz7dv5ptx, der Schlüssel selbst bleibt im Tresor.",
    "Die Bestellnummer lautet 097652998799023325.",
    "El ID de la solicitud es 7d921148-9dc1-41ed-885d-c20e85b16eda.",
    "La clave de idempotencia era 56f261a9-3a8d-43d5-a0be-faf8b9b7a501.",
    "L'identifiant client est 1nrpzbfdd1bwexom et la clé publique est publiée.",
    "Le numéro de commande est 8a390940-360c-4d73-bdd8-03eefcd87541.",
    "O ID da requisição é b2a28667-8397-4351-a419-35aaadcde387.",
    "L'ID della richiesta è 158ezhtutncqslkj.",
    # Japanese, Chinese, Korean, Russian
    "リクエストIDは9f8e7d6c-5b4a-4392-8170-fedcba987654です。",
    "注文番号は2024011500012345です。",
    "请求ID是0a1b2c3d-4e5f-4a7b-8c9d-0e1f2a3b4c5d。",
    "客户端ID为k1mhn6okmsfxcu6r。",
    "요청 ID는 1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d입니다.",
    "Идентификатор запроса: c0ffee00-1234-4abc-9def-0123456789ab.",
]


@pytest.mark.parametrize("text", ID_SENTENCES)
def test_prose_naming_an_id_is_kept(text: str) -> None:
    _kept(text)


# A sentence that says the value is a credential: the value goes whatever its shape. gitleaks' 77 name-only
# formats (values it recognises only beside the vendor's name: short lowercase values, long numbers, UUIDs),
# three samples each, in sentences that name the vendor and call the value a credential, a secret, a token,
# an API key or a password, in English and the other languages the generic detectors know.
CREDENTIAL_SENTENCES = [
    "the {vendor} credential is {value} for prod",
    "the {vendor} secret is {value}",
    "The {vendor} API key is {value}.",
    "the password for {vendor} is {value}",
    "Die Zugangsdaten für {vendor} lauten {value}.",
    "La clave de API de {vendor} es {value}",
    "Le jeton {vendor} est {value}",
    "O token do {vendor} é {value}",
    "Токен {Vendor}: {value}",
    "{vendor}のAPIキーは{value}です",
    "{vendor}的令牌是{value}。",
    "{vendor} 토큰은 {value}입니다",
]


@pytest.mark.parametrize("entry", [r for r in GITLEAKS if r[1] == "context"], ids=lambda e: e[0])
def test_prose_naming_a_credential_removes_a_name_only_value(entry: tuple[str, str, str, str]) -> None:
    rule_id, _, vendor, template = entry
    for seed in range(3):
        value, secret = _gitleaks_sample(rule_id, template, seed)
        for sentence in CREDENTIAL_SENTENCES:
            text = sentence.format(vendor=vendor, Vendor=vendor.capitalize(), value=value)
            out = redact(text).text
            assert not leftovers(Sample("prose", "test", text, (secret,)), out), (rule_id, text, out)


UUID = "5b91250c-bb74-4a62-8f63-cb52956100c0"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"The HubSpot API key is {UUID}.", UUID),
        (f"the snyk token for CI is {UUID}", UUID),
        ("the Discord secret is 826753198340077912", "826753198340077912"),
        ("Our confluent credentials are d4h0k44p7ipxu615", "d4h0k44p7ipxu615"),
        (f"the access token was '{UUID}'", UUID),
        (f"X-Api-Key: {UUID}", UUID),
        (f"Das Heroku-Passwort ist {UUID}", UUID),
        (f"Der API-Schlüssel für Heroku lautet {UUID}.", UUID),
        ("Le credenziali di Airtable sono yb1slrkk3imnwp8bi", "yb1slrkk3imnwp8bi"),
        (f"La chiave API di Heroku è {UUID}", UUID),
        (f"A chave de API da HubSpot é {UUID}", UUID),
        ("Пароль — yb1slrkk3imnwp8bi", "yb1slrkk3imnwp8bi"),
        (f"Herokuのトークンは{UUID}です。", UUID),
        (f"Heroku API 키는 {UUID}입니다.", UUID),
    ],
)
def test_prose_naming_a_credential_removes_the_value_whatever_its_shape(text: str, secret: str) -> None:
    out = _gone(text, secret)
    assert out.count(PLACEHOLDER) == 1


@pytest.mark.parametrize(
    "text",
    [
        # the word names a credential but what the sentence gives is a word, a name, a version or a date
        "the token is expired and must be rotated",
        "the secret is stored in vault under kv/prod",
        "the token is GITHUB_TOKEN",
        "the token was issued on 2024-01-15T10:00:00Z",
        "the token endpoint is https://auth.example.com/oauth2/token",
        "The tokenizer is gpt2tokenizer2",
        "The session token is valid for 3600 seconds",
        # a word, then a number: no generated value alternates so little
        "the token format changed in utf8mb4 and release2024",
        # what the value belongs to is another noun: a compound's head, a count, a version, a limit
        f"the token fix is {UUID}",
        "the token count is 409612345678",
        "the secret version is 12345678901234",
        "the token limit is 100000000000",
        f"The signing key ID is {UUID}",
        "the commit for the token fix is 9f2c4e1a7b3d",
        f"Token ID: {UUID}",
        f"El ID del token es {UUID}",
        f"Der Token-Hash ist {UUID}",
        f"トークンの番号は{UUID}です",
        "the secret is 00000000-0000-0000-0000-000000000000 in the fixture",
        "the refresh token lifetime is 1209600000000",
        "The token supply is 1000000000000000 and the token contract is verified.",
        "# Project-based api keys: 'sk-[project-name]-[20 alnum]'",
    ],
)
def test_prose_naming_a_credential_keeps_words_and_what_belongs_to_another_noun(text: str) -> None:
    _kept(text)


@pytest.mark.parametrize(
    "text",
    [
        "credentials: grpc.ChannelCredentials,",
        "private_key: Ed25519PrivateKey | Ed448PrivateKey",
        "secrets: ServiceConfigOrSecret | None = Field(",
        "api_key: temporalio.api.cloud.identity.v1.message_pb2.ApiKey | None = ...,",
    ],
)
def test_prose_naming_a_credential_reads_no_type_in_code_as_a_value(text: str) -> None:
    """Lines of installed packages that the rule alone first took: a type or a module path after the word.
    (The assignment and near-word rules still take the first three, as they did before this rule.)"""
    assert list(credential_prose(text, 0)) == []


# Shaped like the sentences the prose rules still let through (the value before the word naming it, no verb
# or colon between the word and the value, a value under ten characters, a lower-case name between a Russian
# word and a colon), but with no secret in them: ids, versions, names, counts, policies, algorithms, commits.
# Written before the rules for those shapes, which must keep them all. Two were altered before them: the old
# `value_first` took any password-shaped value before a word naming a password or a token.
GAP_NEAR_MISSES = [
    # the value first, the word naming a credential after it
    "8f3e2a1c-9b7d-4c6e-a5f4-3b2a1c0d9e8f is the request id for the Heroku API key call",
    "use v2.3.1 as the version of the token library",
    "use HS256 as the token signing algorithm",
    "use argon2id as the password hashing scheme",  # altered before
    "use X-Api-Key as the header for the API key",
    "use 3600 as the token TTL",
    "use redis-cluster-2 as the token store",  # altered before
    "blue-river is the Heroku app name for the API key owner",
    "kid-2024-06 is the key id of the signing key",
    "OPENAI_API_KEY is the name of the secret",
    "abc1234 is the commit that fixed the password reset",
    "PR-4821 — that's the prod password rotation ticket",
    "90 days — that's the prod password rotation period",
    "7d3f9a2b is the short hash of the token refactor",
    "us-east-1 is the region of the secrets manager",
    "3dfdd062-7a6d-4ca8-9a27-3b11c5d04e5b is the trace id of the failed token refresh",
    "bcrypt is the password hash we use",
    "Bearer is the token type",
    # no verb or colon between the word and what follows
    "the token bucket holds 10 requests",
    "the heroku token endpoint returns 401 for expired tokens",
    "deploy token scopes for staging are read_registry and read_repository",
    "the heroku token expired yesterday",
    "the token fix landed in commit abc1234",
    "the api key rotation runs on 2024-06-01",
    "the password field pw-input-3 is hidden",
    "the access token lifetime 15m is too short",
    "the github token GITHUB_TOKEN is injected by Actions",
    "the session token cookie __Host-session is set on login",
    "password reset tokens expire after 24h",
    "the secret store kv/prod/db holds the rest",
    "commit abc1234 fixed the token refresh",
    "the token v2 format for staging",
    "deploy token 12 of 20 for staging was revoked",
    # a short value after a word naming a credential
    "password policy: 12 chars",
    "password length: 16",
    "the password is required",
    "the wifi password is on the fridge",
    "the password is too short",
    "pw: see vault",
    "the token is expired",
    "the token type is Bearer",
    "password: ********",
    "token: null",
    "password hashing: bcrypt",
    "the token is JWT",
    "secret: true",
    "the heroku app name is blue-river",
    "the key id is kid-2024",
    "the token limit is 1000",
    "the secret rotation is weekly",
    "the token TTL is 3600s",
    # Russian, Korean, Japanese, Chinese
    "Токен heroku: истёк вчера",
    "Токен доступа: см. хранилище",
    "Ключ api: 3600 секунд",
    "Пароль администратора: не задан",
    "Версия токена: v2.3.1",
    "blue-river가 Heroku 앱 이름입니다",
    "v2.3.1을 토큰 라이브러리 버전으로 사용하세요",
    "토큰 만료 시간은 3600초입니다",
    "비밀번호 정책: 12자 이상",
    "요청 ID는 8f3e2a1c입니다",
    "v2.3.1をトークンライブラリのバージョンとして使う",
    "トークンの有効期限は3600秒です",
    "パスワードは12文字以上です",
    "使用v2.3.1作为令牌库的版本",
    "令牌桶容量为10",
    "密码长度为12位",
]


@pytest.mark.parametrize("text", GAP_NEAR_MISSES)
def test_prose_shaped_like_a_credential_without_one_is_kept(text: str) -> None:
    _kept(text)


# ---------------------------------------------------------------------------------------------------------
# files and machine output (the rules the sixth corpus's tune half asked for)

HEX_KEY = "9c4e1f7a2b8d3e6f0a5c7b9d1e3f5a7c9b2d4f6e8a0c1e3f5b7d9f1a3c5e7b9d"


@pytest.mark.parametrize(
    "text",
    [
        f"## Signing key (prod)\n\n```\n{HEX_KEY}\n```\n",
        f"Session secret for the admin app:\n\n    {RANDOM}\n",
    ],
)
def test_a_key_alone_under_its_heading_past_blank_lines_and_a_fence_is_redacted(text: str) -> None:
    secret = HEX_KEY if HEX_KEY in text else RANDOM
    out = _gone(text, secret)
    assert out.startswith(text.splitlines()[0])


@pytest.mark.parametrize(
    "text",
    [
        f"## Key rotation commit\n\n```\n{HEX_KEY[:40]}\n```\n",  # a heading about a commit: its SHA
        f"## Build output\n\n```\n{RANDOM}\n```\n",  # no word naming a secret above it
    ],
)
def test_a_digest_or_an_unnamed_token_under_a_heading_is_kept(text: str) -> None:
    _kept(text)


def test_terraform_state_random_password_result_is_redacted() -> None:
    text = (
        '  "type": "random_password",\n  "instances": [{\n    "attributes": {\n'
        f'      "length": 20,\n      "result": "{PASSWORD}",\n      "special": true\n'
    )
    _gone(text, PASSWORD)


def test_terraform_state_of_a_random_pet_is_kept() -> None:
    _kept('  "type": "random_pet",\n  "instances": [{\n    "attributes": {\n      "id": "brave-otter"\n')


def test_terraform_plan_sensitive_value_is_kept() -> None:
    _kept('  + resource "aws_db_instance" "db" {\n      + password = (sensitive value)\n    }')


def test_a_session_cookie_in_a_cookie_header_is_redacted() -> None:
    out = _gone(f"Cookie: session={RANDOM}; lang=en", RANDOM)
    assert out == f"Cookie: session={PLACEHOLDER}; lang=en"


def test_an_analytics_cookie_in_a_cookie_header_is_kept() -> None:
    _kept("Cookie: _ga=GA1.2.918273645.1712345678; theme=dark")


CSRF = "kX9fQ2mZ7pLr4TnB8vW1yE3uJ6hA0sDc"


@pytest.mark.parametrize(
    "text",
    [
        f"Cookie: csrftoken={CSRF}; sessionid=abc123def456ghi789",
        f"Cookie: sessionid=8n2j4k5l6m7n8o9p0q1r2s3t4u5v6w7x; csrftoken={CSRF}",
        f"Set-Cookie: csrftoken={CSRF}; Path=/",
        f"Cookie: theme=dark; XSRF-TOKEN={CSRF}",
        f"Cookie: theme=dark; _csrf={CSRF}",
        f"Cookie: theme=dark; csrf_token={CSRF}",
        f"csrftoken={CSRF}",
        f"name=bob&_csrf={CSRF}",
        f"csrfmiddlewaretoken={CSRF}&username=bob",
        f"X-CSRFToken: {CSRF}",
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{CSRF}">',
    ],
)
def test_an_anti_csrf_token_in_a_cookie_header_or_form_is_redacted(text: str) -> None:
    # bound to the session like the session id beside it: a random value under its name goes
    _gone(text, CSRF)


@pytest.mark.parametrize(
    "text",
    [
        'CSRF_COOKIE_NAME = "csrftoken"',
        'CSRF_HEADER_NAME = "HTTP_X_CSRFTOKEN"',
        "CSRF_COOKIE_SECURE = True",
        'CSRF_TRUSTED_ORIGINS = ["https://app.example.com"]',
        "xsrfHeaderName: 'X-XSRF-TOKEN'",
        "csrf: true",
        "Cookie: csrftoken=placeholder; theme=dark",
    ],
)
def test_anti_csrf_settings_and_placeholders_are_kept(text: str) -> None:
    _kept(text)


def test_npmrc_auth_scoped_to_a_registry_is_redacted() -> None:
    value = base64.b64encode(b"ci-bot:k?Tq!vRb?WxL").decode()
    _gone(f"//registry.example.com/:_auth={value}\nalways-auth=true", value)


def test_npmrc_auth_from_the_environment_is_kept() -> None:
    _kept("//registry.example.com/:_auth=${NPM_AUTH}\nalways-auth=true")


def test_mosquitto_password_flag_is_redacted() -> None:
    _gone(f"mosquitto_sub -h mqtt.local -u meter -P {PASSWORD} -t 'plant/#'", PASSWORD)


def test_mosquitto_port_flag_is_kept() -> None:
    _kept("mosquitto_sub -h mqtt.local -p 8883 -t 'plant/#' --cafile ca.crt")


def test_rocket_chat_webhook_token_after_the_integration_id_is_redacted() -> None:
    _gone(f"POST https://chat.example.org/hooks/Xk2PqR7sT9vW3yZ5a/{RANDOM}", RANDOM)


def test_a_hooks_path_of_words_is_kept() -> None:
    _kept("see https://chat.example.org/hooks/overview/documentation-index for how")


def test_indonesian_sandi_with_sekarang_is_redacted() -> None:
    _gone(f"sandi wifi tamu sekarang {PASSWORD}", PASSWORD)


def test_indonesian_sandi_in_prose_is_kept() -> None:
    _kept("sandi wifi sekarang sudah diganti, tanya ke admin")


@pytest.mark.parametrize(
    "text",
    [
        "db_password: ENC[AES256_GCM,data:q8Zr4Tn1Lw0Vb6Xc,iv:Pk3m9R2s7Vx1Yz5Ab8Cd0Ef4Gh6Ij=,"
        "tag:Lm2No4Pq6Rs8Tu0Vw==,type:str]",
        "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nspec:\n  encryptedData:\n"
        f"    api_token: AgC{RANDOM}{RANDOM}\n",
        f"applicationServerKey: 'B{RANDOM}{RANDOM}' (VAPID public key)",
    ],
)
def test_ciphertext_and_a_vapid_public_key_are_kept(text: str) -> None:
    _kept(text)


@pytest.mark.parametrize(
    "text",
    [
        f"encryptedData:\n  password: {PASSWORD}\n",  # no SealedSecret named: judged as any YAML
        f"kind: SealedSecret\nstringData:\n  password: {PASSWORD}\n",  # outside `encryptedData:`
        f"serverKey: '{RANDOM}'",
    ],
)
def test_values_beside_ciphertext_shapes_are_still_redacted(text: str) -> None:
    _gone(text, PASSWORD if PASSWORD in text else RANDOM)
