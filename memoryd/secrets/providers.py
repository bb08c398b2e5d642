"""The key forms services publish, beyond the ones rules.py names a kind for: each a
prefix the service puts on every key it issues and the body after it. Gathered from the
forms the gitleaks and detect-secrets projects document (the two rule sets a user is
most likely to be checked against); rules.py makes one rule of them (kind `provider`).

Only forms with a fixed, distinctive start are here: a bare 40-character hex string is
a commit hash far more often than a key, so that form of Sourcegraph's is left out."""

from __future__ import annotations

_B64 = r"[A-Za-z0-9+/]"
_ALNUM = r"[A-Za-z0-9]"
_HEX = r"[A-Fa-f0-9]"
_WORD = r"[A-Za-z0-9_-]"

# (the start, the body): the body's length is the shortest the service issues.
PREFIXED: tuple[tuple[str, str], ...] = (
    (r"A3-", r"[A-Z0-9]{6}-[A-Z0-9-]{11,12}-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"),  # 1Password
    (r"ops_eyJ", rf"{_B64}{{100,}}={{0,3}}"),  # 1Password service accounts
    (r"p8e-", rf"{_ALNUM}{{32}}"),  # Adobe
    (r"AGE-SECRET-KEY-1", r"[A-Z0-9]{58}"),  # age
    (r"pat", rf"{_ALNUM}{{14}}\.{_HEX}{{64}}"),  # Airtable
    (r"LTAI", rf"{_ALNUM}{{20}}"),  # Alibaba Cloud
    (r"ATATT3", r"[A-Za-z0-9_=-]{150,}"),  # Atlassian
    (r"AKCp", rf"{_ALNUM}{{60,}}"),  # Artifactory
    (r"AKC", rf"(?=[a-zA-Z]*[0-9]){_ALNUM}{{10,}}"),  # Artifactory (detect-secrets' shorter form)
    (r"cmVmd", rf"{_ALNUM}{{59}}"),  # Artifactory reference tokens
    (r"(?:sc|ext|scauth|authress)_", r"[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-]"
     r"[A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,}"),  # Authress
    (r"ABSK", rf"{_B64}{{100,}}={{0,2}}"),  # AWS Bedrock
    (r"bedrock-api-key-", rf"{_B64}{{20,}}={{0,2}}"),
    (r"A3T[A-Z0-9]", r"[A-Z0-9]{16}"),  # AWS (an older access key form)
    (r"4b1d", rf"{_ALNUM}{{38}}"),  # ClickHouse Cloud
    (r"CLOJARS_", rf"{_ALNUM}{{60}}"),
    (r"v1\.0-", rf"{_HEX}{{24}}-{_HEX}{{146}}"),  # Cloudflare Origin CA
    (r"dapi", rf"{_HEX}{{32}}(?:-\d)?"),  # Databricks
    (r"do[opr]_v1_", rf"{_HEX}{{64}}"),  # DigitalOcean
    (r"dp\.pt\.", rf"{_ALNUM}{{43}}"),  # Doppler
    (r"duffel_(?:test|live)_", r"[A-Za-z0-9_=-]{43}"),
    (r"dt0c01\.", rf"{_ALNUM}{{24}}\.{_ALNUM}{{64}}"),  # Dynatrace
    (r"EZ[AT]K", rf"{_ALNUM}{{54}}"),  # EasyPost
    (r"EAA[MC]", rf"{_ALNUM}{{100,}}"),  # Facebook pages
    (r"FLW(?:SECK|PUBK)_TEST-", rf"{_ALNUM}{{12,}}(?:-X)?"),  # Flutterwave
    (r"fo1_", rf"{_WORD}{{43}}"),  # Fly.io
    (r"fm(?:1[ar]|2)_", rf"{_B64}{{100,}}={{0,3}}"),
    (r"fio-u-", r"[A-Za-z0-9_=-]{64}"),  # Frame.io
    (r"gl(?:cbt|dt|ffct|ft|imt|agent|oas|ptt|rt|soat|sa|c)[-_]", r"[A-Za-z0-9_+/=-]{20,}"),
    (r"GR1348941", rf"{_WORD}{{20,}}"),  # GitLab runner registration
    (r"_gitlab_session=", rf"{_ALNUM}{{32}}"),
    (r"eyJrIjoi", rf"{_ALNUM}{{70,}}={{0,3}}"),  # Grafana
    (r"(?:pat|sat)\.", rf"{_WORD}{{22}}\.{_ALNUM}{{24}}\.{_ALNUM}{{20}}"),  # Harness
    (rf"{_ALNUM}{{14}}\.atlasv1\.", r"[A-Za-z0-9_=-]{60,}"),  # Terraform Cloud
    (r"HRKU-AA", rf"{_WORD}{{58}}"),  # Heroku
    (r"api_org_", rf"{_ALNUM}{{34}}"),  # Hugging Face organisations
    (r"ico-", rf"{_ALNUM}{{32}}"),  # Infracost
    (r"s-s4t2(?:ud|af)-", rf"{_HEX}{{64}}"),  # 42 intra
    (r"lin_api_", rf"{_ALNUM}{{40}}"),  # Linear
    (rf"{_ALNUM}{{6}}_", rf"{_ALNUM}{{29}}_mmk"),  # MaxMind
    (r"ntn_", rf"{_ALNUM}{{46}}"),  # Notion
    (r"API-", r"(?=[A-Z]*[0-9])[A-Z0-9]{26}"),  # Octopus Deploy
    (r"sha256~", rf"{_WORD}{{43}}"),  # OpenShift
    (r"pplx-", rf"{_ALNUM}{{48}}"),  # Perplexity
    (r"pscale_(?:tkn|oauth|pw)_", r"[A-Za-z0-9_=.-]{32,64}"),  # PlanetScale
    (r"PMAK-", rf"{_HEX}{{24}}-{_HEX}{{34}}"),  # Postman
    (r"pnu_", rf"{_ALNUM}{{36}}"),  # Prefect
    (r"pul-", rf"{_HEX}{{40}}"),  # Pulumi
    (r"pypi-Ag", rf"{_WORD}{{50,}}"),  # PyPI
    (r"rdme_", rf"{_ALNUM}{{70}}"),  # ReadMe
    (r"rubygems_", rf"{_HEX}{{48}}"),
    (r"tk-us-", rf"{_WORD}{{48}}"),  # Scalingo
    (r"SG\.", r"[A-Za-z0-9=_.-]{60,}"),  # SendGrid (its other form)
    (r"xkeysib-", rf"{_HEX}{{64}}-{_ALNUM}{{16}}"),  # Brevo (Sendinblue)
    (r"sntrys_eyJ", r"[A-Za-z0-9+/=_]{20,}"),  # Sentry
    (r"sntryu_", rf"{_HEX}{{64}}"),
    (r"sm_(?:aat|pat|sat)_", rf"{_ALNUM}{{16}}"),  # SettleMint
    (r"shippo_(?:live|test)_", rf"{_HEX}{{40}}"),
    (r"shp(?:at|ca|pa|ss)_", rf"{_HEX}{{32}}"),  # Shopify
    (r"xapp-\d-", r"[A-Za-z0-9-]{10,}"),  # Slack apps
    (r"xoxe(?:.xox[bp])?-\d-", rf"{_ALNUM}{{100,}}"),  # Slack configuration tokens
    (r"xox[a-z]-", r"[A-Za-z0-9-]{8,}"),  # Slack, every other kind
    (r"sgp_", rf"(?:{_HEX}{{16}}_|local_)?{_HEX}{{40}}"),  # Sourcegraph
    # Square (detect-secrets' form allows a backslash in the body, so this does too).
    (r"(?:EAAA|sq0atp-|sq0csp-)", r"[A-Za-z0-9_\\-]{22,}"),
    (r"(?:sk|rk)_prod_", rf"{_ALNUM}{{10,}}"),  # Stripe (its third mode)
    (r"(?:sk|rk)_(?:live|test)_", rf"{_ALNUM}{{10,}}"),
    (r"hv[sb]\.", rf"{_WORD}{{90,}}"),  # HashiCorp Vault
    (r"s\.", r"(?=[a-z]*[0-9])[a-z0-9]{24}"),  # Vault (its older form)
    (r"sk-", rf"{_WORD}*{_ALNUM}{{20}}T3BlbkFJ{_ALNUM}{{20}}"),  # OpenAI (its older form)
    (r"dnkey-", r"[A-Za-z0-9_=-]{26}-[A-Za-z0-9_=-]{52}"),  # Dynatrace
    (r"NR(?:AK|II|JS)-", r"[A-Za-z0-9-]{19,}"),  # New Relic
    (r"tfp_", r"[A-Za-z0-9_.=-]{59}"),  # Typeform
    (r"key-", rf"{_HEX}{{32}}"),  # Mailgun
    (r"pubkey-", rf"{_HEX}{{32}}"),
    (r"AccountKey=", r"[A-Za-z0-9+/=]{88}"),  # Azure Storage
)

# Forms with no prefix, but a shape no ordinary text has.
SHAPED: tuple[str, ...] = (
    r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",  # Azure AD client secrets
    r"[0-9a-z]{32}-us\d{1,2}",  # Mailchimp
    r"\d{8,10}:[0-9A-Za-z_-]{35}",  # Telegram bots
    r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27}",  # Discord bots
    r"AP(?=[A-Za-z]*[0-9])[\dA-F][A-Za-z0-9]{8,}",  # Artifactory passwords (detect-secrets)
    r"https://[a-z0-9]+\.webhook\.office\.com/webhookb2/[^\s\"'<>]+",  # Teams webhooks
)

# Services whose name, followed by an assignment, marks a key (`ALGOLIA_KEY = ...`,
# "twilio_auth: ..."): the gitleaks rules of this shape name these.
SERVICES: tuple[str, ...] = (
    "adafruit", "adobe", "airtable", "algolia", "alibaba", "asana", "atlassian", "beamer",
    "bintray", "bitbucket", "bittrex", "cloudflare", "codecov", "cohere", "co_api_key",
    "coinbase", "confluence", "confluent", "contentful", "datadog", "discord", "droneci",
    "dropbox", "etsy", "facebook", "fastly", "finicity", "finnhub", "flickr", "freshbooks",
    "gitter", "gocardless", "heroku", "hubspot", "intercom", "jfrog", "jira", "kraken",
    "kucoin", "launchdarkly", "linear", "linked[_-]?in", "looker", "mailchimp",
    "mailgun", "mapbox", "mattermost", "meraki", "message[_-]?bird", "netlify",
    "new[_-]?relic", "nytimes", "new[_-]?york[_-]?times", "okta", "plaid",
    "private[_-]?ai", "rapidapi", "sendbird", "sentry", "snyk", "sonar",
    "squarespace", "sumo", "telegr(?:am)?", "travis", "twitch", "twitter", "xray",
    "yandex", "zendesk", "dnkey", "lob", "typeform", "artifactory", "contribsys",
    "cloudant", "ibm", "softlayer", "azure",
)
