"""The 26 line items of the three statements and the 15 ratios, with their English and Chinese labels."""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "ITEM_BY_KEY",
    "ITEM_KEYS",
    "LINE_ITEMS",
    "NON_NEGATIVE",
    "RATIOS",
    "STATEMENTS",
    "LineItem",
    "Ratio",
]


class LineItem(NamedTuple):
    """One line of a statement: its JSON key, its labels and the statement it belongs to."""

    key: str
    english: str
    chinese: str
    statement: str


class Ratio(NamedTuple):
    """One ratio: its key, labels, and how it reads (a fraction, a multiple or days)."""

    key: str
    english: str
    chinese: str
    unit: str


#: Statement keys in display order, with their labels.
STATEMENTS: dict[str, tuple[str, str]] = {
    "income": ("Income statement", "利润表"),
    "balance": ("Balance sheet (year end)", "资产负债表（年末）"),
    "cash_flow": ("Cash-flow statement", "现金流量表"),
}

LINE_ITEMS: tuple[LineItem, ...] = (
    LineItem("revenue", "Revenue", "营业收入", "income"),
    LineItem("cost_of_sales", "Cost of sales", "营业成本", "income"),
    LineItem("gross_profit", "Gross profit", "毛利润", "income"),
    LineItem("operating_expenses", "Selling, general & administrative expenses", "销售及管理费用", "income"),
    LineItem("depreciation", "Depreciation", "折旧费用", "income"),
    LineItem("amortisation", "Amortisation of intangible assets", "无形资产摊销", "income"),
    LineItem("interest_expense", "Interest expense", "利息费用", "income"),
    LineItem("income_tax", "Income tax", "所得税费用", "income"),
    LineItem("net_income", "Net income", "净利润", "income"),
    LineItem("cash", "Cash", "货币资金", "balance"),
    LineItem("accounts_receivable", "Accounts receivable", "应收账款", "balance"),
    LineItem("inventory", "Inventory", "存货", "balance"),
    LineItem("fixed_assets", "Fixed assets, net", "固定资产净额", "balance"),
    LineItem("intangible_assets", "Intangible assets, net", "无形资产净额", "balance"),
    LineItem("total_assets", "Total assets", "资产总计", "balance"),
    LineItem("accounts_payable", "Accounts payable", "应付账款", "balance"),
    LineItem("accrued_expenses", "Accrued expenses", "应计费用", "balance"),
    LineItem("short_term_debt", "Short-term borrowings", "短期借款", "balance"),
    LineItem("debt", "Long-term borrowings", "长期借款", "balance"),
    LineItem("share_capital", "Share capital", "实收资本（股本）", "balance"),
    LineItem("retained_earnings", "Retained earnings", "留存收益", "balance"),
    LineItem("change_in_working_capital", "Cash from changes in working capital", "营运资本变动", "cash_flow"),
    LineItem("operating_cash_flow", "Net cash from operating activities", "经营活动产生的现金流量净额", "cash_flow"),
    LineItem("investing_cash_flow", "Net cash from investing activities", "投资活动产生的现金流量净额", "cash_flow"),
    LineItem("financing_cash_flow", "Net cash from financing activities", "筹资活动产生的现金流量净额", "cash_flow"),
    LineItem("dividends_paid", "Dividends paid", "分配股利支付的现金", "cash_flow"),
)

ITEM_KEYS: tuple[str, ...] = tuple(item.key for item in LINE_ITEMS)
ITEM_BY_KEY: dict[str, LineItem] = {item.key: item for item in LINE_ITEMS}

#: Items that can never be negative in a valid set of statements (amounts, balances and expenses as positive numbers).
NON_NEGATIVE: tuple[str, ...] = (
    "revenue", "cost_of_sales", "operating_expenses", "depreciation", "amortisation", "interest_expense", "income_tax",
    "cash", "accounts_receivable", "inventory", "fixed_assets", "intangible_assets", "total_assets",
    "accounts_payable", "accrued_expenses", "short_term_debt", "debt", "share_capital", "dividends_paid",
)

RATIOS: tuple[Ratio, ...] = (
    Ratio("revenue_growth", "Revenue growth", "营业收入增长率", "fraction"),
    Ratio("gross_margin", "Gross margin", "毛利率", "fraction"),
    Ratio("operating_margin", "Operating margin", "营业利润率", "fraction"),
    Ratio("net_margin", "Net margin", "净利率", "fraction"),
    Ratio("return_on_assets", "Return on assets", "总资产收益率", "fraction"),
    Ratio("return_on_equity", "Return on equity", "净资产收益率", "fraction"),
    Ratio("current_ratio", "Current ratio", "流动比率", "multiple"),
    Ratio("debt_to_equity", "Debt to equity", "产权比率（借款/权益）", "multiple"),
    Ratio("liabilities_to_assets", "Liabilities to assets", "资产负债率", "fraction"),
    Ratio("interest_coverage", "Interest coverage", "利息保障倍数", "multiple"),
    Ratio("asset_turnover", "Asset turnover", "总资产周转率", "multiple"),
    Ratio("receivable_days", "Receivable days", "应收账款周转天数", "days"),
    Ratio("inventory_days", "Inventory days", "存货周转天数", "days"),
    Ratio("payable_days", "Payable days", "应付账款周转天数", "days"),
    Ratio("payout_ratio", "Dividend payout ratio", "股利支付率", "fraction"),
)
