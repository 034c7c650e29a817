"""The task generator: a simulated company's visible years and outlook; the next year stays hidden."""

from __future__ import annotations

import json
import math
import random
import string
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs

from bootcamp_core import ConfigError, TaskGenerator
from bootcamp_financial_prediction.accounting import IDENTITIES
from bootcamp_financial_prediction.answer import ANSWER_FORMAT
from bootcamp_financial_prediction.items import ITEM_KEYS, LINE_ITEMS, STATEMENTS
from bootcamp_financial_prediction.outlook import HIDDEN_KEY, public_view
from bootcamp_financial_prediction.scoring import DEFAULT_SCORING
from bootcamp_financial_prediction.simulator import GUIDABLE, Settings, draw_company, predictability

__all__ = ["DATA_MARKER", "ForecastGenerator", "read_prompt_data"]

#: The line that introduces the machine-readable copy of the prompt's figures.
DATA_MARKER = "The same information as JSON (amounts in thousands):"
#: Calls of each tool per episode, unless the config says otherwise.
DEFAULT_TOOL_BUDGET = 4
GUIDANCE_NAMES = tuple(sorted(set(GUIDABLE.values())))
#: The public keys of an identity that the prompt's JSON block holds.
PROMPT_DATA_KEYS = ("years", "forecast_year", "statements", "policies", "outlook", "guidance_history",
                    "one_off_items")

_INDUSTRIES = (
    ("industrial components", "工业零部件"), ("consumer electronics", "消费电子"), ("packaged foods", "食品饮料"),
    ("specialty chemicals", "特种化工"), ("apparel retail", "服装零售"), ("medical devices", "医疗器械"),
    ("building materials", "建筑材料"), ("auto parts", "汽车零部件"),
)
#: driver -> (label, Chinese label, how its range reads, what the "no guidance" line calls it)
_OUTLOOK_LABELS = {
    "revenue_growth": ("Revenue growth", "营业收入增长率", "percent", "revenue growth"),
    "gross_margin": ("Gross margin", "毛利率", "percent", "gross margin"),
    "operating_expense_growth": ("SG&A growth", "销售及管理费用增长率", "percent", "SG&A growth"),
    "receivable_days": ("Receivable days (receivables / revenue × 365)", "应收账款周转天数", "days", "receivable days"),
    "inventory_days": ("Inventory days (inventory / cost of sales × 365)", "存货周转天数", "days", "inventory days"),
    "payable_days": ("Payable days (payables / cost of sales × 365)", "应付账款周转天数", "days", "payable days"),
    "accrued_days": ("Accrued expense days (accrued expenses / SG&A × 365)", "应计费用天数", "days",
                     "accrued expense days"),
}


def _number(config: Mapping[str, Any], key: str, low: float, high: float) -> float:
    value = config[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{key} must be a number, got {value!r}", field=key)
    if not low <= value <= high:
        raise ConfigError(f"{key} must be between {low:g} and {high:g}, got {value!r}", field=key)
    return float(value)


def _integer(config: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = _number(config, key, low, high)
    if value != int(value):
        raise ConfigError(f"{key} must be a whole number, got {config[key]!r}", field=key)
    return int(value)


def _settings(config: Mapping[str, Any]) -> Settings:
    defaults = Settings()
    merged = {
        "visible_years": defaults.visible_years, "noise": defaults.noise, "guidance": sorted(defaults.guidance),
        "guidance_width": defaults.guidance_width, "capex_announcement": defaults.capex_announcement,
        "share_issue_probability": defaults.share_issue_probability,
        "zero_debt_probability": defaults.zero_debt_probability,
        "no_dividend_probability": defaults.no_dividend_probability,
        "revenue_range": list(defaults.revenue_range), "scenarios": defaults.scenarios, **config,
    }
    guidance = merged["guidance"]
    if isinstance(guidance, str) or not isinstance(guidance, (list, tuple)) or not all(
        isinstance(name, str) for name in guidance
    ):
        raise ConfigError(f"guidance must be a list drawn from {list(GUIDANCE_NAMES)}, got {guidance!r}",
                          field="guidance")
    unknown = sorted(set(guidance) - set(GUIDANCE_NAMES))
    if unknown:
        raise ConfigError(f"unknown guidance {', '.join(unknown)}; choose from {', '.join(GUIDANCE_NAMES)}",
                          field="guidance")
    if merged["capex_announcement"] not in ("exact", "range"):
        raise ConfigError(f'capex_announcement must be "exact" or "range", got {merged["capex_announcement"]!r}',
                          field="capex_announcement")
    revenue_range = merged["revenue_range"]
    if not isinstance(revenue_range, (list, tuple)) or len(revenue_range) != 2:
        raise ConfigError(f"revenue_range must be [low, high], got {revenue_range!r}", field="revenue_range")
    low = _number({"revenue_range": revenue_range[0]}, "revenue_range", 1_000, 1e9)
    high = _number({"revenue_range": revenue_range[1]}, "revenue_range", low, 1e9)
    return Settings(
        visible_years=_integer(merged, "visible_years", 2, 10),
        noise=_number(merged, "noise", 0.0, 5.0),
        guidance=frozenset(guidance),
        guidance_width=_number(merged, "guidance_width", 0.1, 5.0),
        capex_announcement=merged["capex_announcement"],
        share_issue_probability=_number(merged, "share_issue_probability", 0.0, 1.0),
        zero_debt_probability=_number(merged, "zero_debt_probability", 0.0, 1.0),
        no_dividend_probability=_number(merged, "no_dividend_probability", 0.0, 1.0),
        revenue_range=(low, high),
        scenarios=_integer(merged, "scenarios", 16, 100_000),
    )


def _scoring(config: Mapping[str, Any]) -> dict[str, float]:
    given = config.get("scoring") or {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"scoring must be a mapping, got {given!r}", field="scoring")
    unknown = sorted(set(given) - set(DEFAULT_SCORING))
    if unknown:
        raise ConfigError(f"unknown scoring setting {', '.join(unknown)}; known: {', '.join(DEFAULT_SCORING)}",
                          field="scoring")
    merged = {**DEFAULT_SCORING, **given}
    return {
        "sigmas": _number(merged, "sigmas", 0.01, 100.0),
        "consistency_tolerance": _number(merged, "consistency_tolerance", 0.0, 0.1),
        "guidance_penalty": _number(merged, "guidance_penalty", 0.0, 1.0),
    }


def _amount(value: int) -> str:
    return f"{value:,}"


def _percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def _range_text(low: float, high: float, unit: str) -> str:
    return f"{low * 100:.3f}% to {high * 100:.3f}%" if unit == "percent" else f"{low:.2f} to {high:.2f} days"


def _history_lines(public: Mapping) -> list[str]:
    """Management's past ranges, year by year: the outcomes are in the table, so its habits can be read."""
    lines = []
    for entry in public.get("guidance_history") or []:
        shown = [f"{_OUTLOOK_LABELS[driver][3]} {_range_text(*entry[driver], _OUTLOOK_LABELS[driver][2])}"
                 for driver in _OUTLOOK_LABELS if driver in entry]
        lines.append(f"- FY{entry['year']}: " + "; ".join(shown))
    return lines


def _one_off_lines(public: Mapping) -> list[str]:
    return [
        f"- FY{entry['year']}: selling, general & administrative expenses include a one-off restructuring charge of "
        f"{_amount(entry['amount'])} (一次性重组费用), which does not recur; SG&A growth (guided or not) is the growth "
        "of the recurring expenses, without it."
        for entry in public.get("one_off_items") or []
    ]


class ForecastGenerator(TaskGenerator):
    """A company simulated for ``visible_years`` + 1 years; the prompt shows all but the last and asks for it."""

    name: ClassVar[str] = "forecast"
    tools: ClassVar[tuple[str, ...]] = ("calculate_metrics", "check_consistency")
    interaction: ClassVar[str | None] = "answer_feedback"
    reward: ClassVar[str] = "forecast"
    #: The hidden year, the drivers and the company's parameters: the answer and how it was made.
    hidden_fields: ClassVar[tuple[str, ...]] = (HIDDEN_KEY,)

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        known = {field.name for field in attrs.fields(Settings)} | {"scoring", "tool_budget"}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ConfigError(f"{type(self).__name__}: unknown setting {', '.join(unknown)}; known: "
                              f"{', '.join(sorted(known))}")
        self.settings = _settings(config)
        self.scoring = _scoring(config)
        self.tool_budget = _integer({"tool_budget": config.get("tool_budget", DEFAULT_TOOL_BUDGET)}, "tool_budget",
                                    1, 100)

    def case_generator(self, rng: random.Random) -> dict:
        """The company, its visible years and outlook, and under ``hidden`` the year to forecast; only from ``rng``."""
        company = draw_company(rng, self.settings)
        first_year = rng.randint(2012, 2021)
        industry = rng.choice(_INDUSTRIES)
        code = f"{rng.choice(string.ascii_uppercase)}{rng.randint(100, 999)}"
        visible = self.settings.visible_years
        scales = predictability(company, rng.getrandbits(63), self.settings.scenarios)
        return {
            "company": {"name": f"Company {code}", "chinese_name": f"{code} 公司", "industry": list(industry)},
            "years": list(range(first_year, first_year + visible)),
            "forecast_year": first_year + visible,
            "statements": company.years[:visible],
            "policies": company.policies,
            "outlook": company.outlook,
            "guidance_history": [
                {"year": first_year + entry["index"], **{key: value for key, value in entry.items() if key != "index"}}
                for entry in company.guidance_history
            ],
            "one_off_items": [
                {"year": first_year + index, "item": "operating_expenses", "amount": amount}
                for index, amount in sorted(company.one_offs.items())
            ],
            "scoring": dict(self.scoring),
            "tool_budget": self.tool_budget,
            HIDDEN_KEY: {
                "statements": company.years[visible],
                "scales": scales,
                "drivers": company.drivers,
                "base": company.base,
                "opening": company.opening,
            },
        }

    def prompt_func(self, identity: dict, rng: random.Random) -> str:
        """The visible years as a bilingual table, the policies and outlook, the tools and the answer format."""
        return render_prompt(public_view(identity))


def _table(public: Mapping) -> list[str]:
    years = public["years"]
    header = "| Line item 项目 | key | " + " | ".join(f"FY{year}" for year in years) + " |"
    lines = [header, "|---|---|" + "---:|" * len(years)]
    for statement, (english, chinese) in STATEMENTS.items():
        lines.append(f"| **{english} {chinese}** | | " + " | ".join("" for _ in years) + " |")
        for item in LINE_ITEMS:
            if item.statement == statement:
                cells = " | ".join(_amount(year[item.key]) for year in public["statements"])
                lines.append(f"| {item.english} {item.chinese} | `{item.key}` | {cells} |")
    return lines


def _policy_lines(policies: Mapping[str, float]) -> list[str]:
    payout = policies["payout_ratio"]
    dividends = (
        f"pays {_percent(payout)} of the year's net income as dividends in the same year (none on a loss)"
        if payout else "pays no dividends"
    )
    return [
        f"- Depreciation 折旧: {_percent(policies['depreciation_rate'])} of the previous year-end net fixed assets.",
        (
            f"- Amortisation 摊销: {_percent(policies['amortisation_rate'])} of the previous year-end net intangible "
            "assets (acquired intangibles; no additions are planned)."
        ),
        (
            f"- Interest 利息: {_percent(policies['short_term_interest_rate'])} of the previous year-end short-term "
            f"borrowings plus {_percent(policies['interest_rate'])} of the previous year-end long-term borrowings, "
            "rounded once to whole units."
        ),
        (
            f"- Long-term borrowings 长期借款: {_percent(policies['long_term_repayment_rate'])} of the previous year-end "
            "balance is repaid on schedule during the year (rounded to whole units)."
        ),
        f"- Income tax 所得税: {_percent(policies['tax_rate'])} of pre-tax income; no tax on a loss.",
        f"- Dividend policy 股利政策: the company {dividends}.",
        (
            f"- Cash policy 现金政策: cash at year end is at least {_percent(policies['minimum_cash_ratio'])} of the "
            "year's revenue; short-term borrowings fund any shortfall (after the scheduled repayment), and cash "
            "above that minimum repays short-term borrowings first, then long-term borrowings (no idle cash while "
            "borrowings are outstanding)."
        ),
    ]


def _outlook_lines(outlook: Mapping[str, Any]) -> list[str]:
    lines, unguided = [], []
    for driver, (english, chinese, unit, short) in _OUTLOOK_LABELS.items():
        guided = outlook.get(driver)
        if guided is None:
            unguided.append(short)
            continue
        low, high = guided
        shown = _range_text(low, high, unit)
        lines.append(f"- {english} {chinese}: {shown}")
    low, high = outlook["capital_expenditure"]
    spend = _amount(low) if low == high else f"between {_amount(low)} and {_amount(high)}"
    lines.append(f"- Capital expenditure 资本支出 (announced): {spend}")
    issue = outlook["share_issue"]
    lines.append(
        f"- Share issue 股权融资: an approved issue raises {_amount(issue)} in cash during the year"
        if issue else "- Share issue 股权融资: none planned"
    )
    if unguided:
        lines.append(f"- No guidance on {', '.join(unguided)}: estimate them from the history.")
    return lines


def _track_record(public: Mapping) -> list[str]:
    sections = []
    history = _history_lines(public)
    if history:
        sections.append(
            "Management's guidance in past years 历史指引 (the ranges announced before each year; the outcomes are in "
            "the table above):\n" + "\n".join(history)
        )
    one_offs = _one_off_lines(public)
    sections.append("Notes 附注:\n" + ("\n".join(one_offs) if one_offs else "- No one-off items in these years."))
    return sections


def render_prompt(public: Mapping) -> str:
    """The prompt for the public part of an identity (never the hidden part)."""
    years, target = public["years"], public["forecast_year"]
    company = public["company"]
    budget = public["tool_budget"]
    tolerance = public["scoring"]["consistency_tolerance"]
    data = {key: public[key] for key in PROMPT_DATA_KEYS}
    sections = [
        (
            f"You are an equity analyst covering {company['name']} ({company['chinese_name']}), a simulated "
            f"{company['industry'][0]} company ({company['industry'][1]}). Below are its statements for "
            f"FY{years[0]}–FY{years[-1]}, in thousands of currency units (单位：千元). Forecast its FY{target} "
            f"statements: all {len(ITEM_KEYS)} line items."
        ),
        f"请根据以下 FY{years[0]}–FY{years[-1]} 年的三张报表及管理层指引，预测 FY{target} 年全部 {len(ITEM_KEYS)} 个项目。",
        "\n".join(_table(public)),
        (
            "Expenses, balances and dividends_paid are positive amounts; the cash-flow subtotals carry their sign "
            "(investing_cash_flow is negative when the company buys fixed assets; change_in_working_capital is "
            "positive when working capital releases cash). `debt` is the long-term borrowings; accrued expenses "
            "are SG&A incurred but not yet paid. Every "
            f"year satisfies these identities, and your FY{target} forecast must too (\"previous\" is FY{years[-1]}):"
        ),
        "\n".join(f"- {identity.formula}" for identity in IDENTITIES),
        f"Company policies 公司政策 (they continue in FY{target}):",
        "\n".join(_policy_lines(public["policies"])),
        f"Management outlook for FY{target} 管理层指引:",
        "\n".join(_outlook_lines(public["outlook"])),
        *_track_record(public),
        DATA_MARKER + "\n\n```json\n" + json.dumps(data, separators=(",", ":")) + "\n```",
        (
            "Tools: `calculate_metrics` gives 15 ratios of a set of statements next to those of "
            f"FY{years[-1]}; `check_consistency` lists the identities, policies and announcements a set of "
            f"statements breaks, and by how much. Each allows {budget} calls in this task."
        ),
        (
            f"Scoring: each line item is compared with the actual FY{target} figure, relative to how predictable it "
            f"is from this information. Statements that break an identity by more than {tolerance * 100:g}% of "
            f"FY{years[-1]} total assets (or with a negative amount that must be positive) score 0; a forecast that "
            "ignores the outlook or the policies loses points."
        ),
        (
            f"Give your final answer as one fenced JSON block with all {len(ITEM_KEYS)} keys, amounts in thousands:"
            f"\n\n{ANSWER_FORMAT}"
        ),
    ]
    return "\n\n".join(sections)


def read_prompt_data(prompt: str) -> dict | None:
    """The machine-readable figures of a prompt (what follows :data:`DATA_MARKER`), or ``None``."""
    _, marker, rest = prompt.partition(DATA_MARKER)
    if not marker:
        return None
    start, end = rest.find("```json\n"), rest.find("\n```", rest.find("```json\n") + 8)
    if start < 0 or end < 0:
        return None
    try:
        data = json.loads(rest[start + 8 : end])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
