"""The cue lexicon of the emotion recognizer, compiled once at import.

Every surface is matched against folded text: lower case, Traditional Chinese
converted to Simplified (``intent_filter.text.to_simplified``), ``’`` as ``'``,
whitespace collapsed. In the tables below "_" stands for a space inside an
English phrase; English words match whole words only, Chinese and emoji
anywhere. Traditional spellings that do not fold back to the Simplified entry
("著急") are added automatically.

A surface is one of:

* a **cue** of one label, with a weight in (0, 1]: how sure the word alone
  makes us (0.9 explicit — "气死", "terrified"; 0.7 clear; 0.5 a hint;
  0.35 weak). A cue may say what it turns into when negated ("不开心" is
  sadness, "没有不开心" joy);
* a **negator** ("不", "没有", "一点都不", "not", "never"), flipping the next cue;
* a **degree word** before a cue ("很" ×1.3, "有点" ×0.6) or after it
  ("死了", "极了", "so much");
* a **break**: punctuation or a conjunction; contrastive ones ("但是",
  "结果", "but") make the clauses after them weigh more;
* an **expectation** ("本来以为", "I thought"; weaker, "答应", "本来"):
  disappointment when a contrast follows;
* a **blocker**: a word that contains a negator or cue but is neither
  ("不知道", "不好意思", "恐怕", "麻烦").

``STRUCTURES`` adds the few patterns a word list cannot express ("还是编译不过").
Everything is compiled at import into ``TABLE`` (surface → ``Token``) and one
regex, ``PATTERN``: a character trie of every surface, longest match first.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
import re

from zhconv_rs import zhconv

from ..language import to_simplified
from ..trie_regex import alternation
from .labels import Emotion

E = Emotion

_PHRASE_SPACE = re.compile(r"(?<=[a-z0-9'?!.])_(?=[a-z0-9'])")


def _surfaces(spec: str) -> list[str]:
    """Split a surface list; "_" between Latin words stands for a space."""
    return [_PHRASE_SPACE.sub(" ", s.lower()) for s in spec.split()]


# --- cues -------------------------------------------------------------------

# Per label: weight -> surfaces (Chinese and English together).
CUES: dict[Emotion, dict[float, str]] = {
    E.ANGER: {
        0.9: "想打人 找死 欠揍 放屁 令人发指 忍不了 我要炸了 气得要命 恼羞成怒 "
        "怒火中烧 气死 气炸 气疯 气坏 愤怒 暴怒 火冒三丈 忍无可忍 岂有此理 恨死 "
        "讨厌死 烦死 去死 滚蛋 混蛋 王八蛋 混账 他妈的 妈的 靠北 怒不可遏 气死人 "
        "太过分 fuming seething how_could_you piss_off tmd furious livid enraged "
        "outraged infuriating infuriated pissed_off how_dare_you fuck fucking wtf "
        "what_the_hell what_the_fuck",
        0.7: "烦不烦 不像话 太不像话 怎么可以这样 怎么能这样 怨恨 愤恨 讨厌鬼 "
        "你烦不烦 无理取闹 胡说八道 扯淡 吵架 竟敢 炸了 生气 火大 恼火 投诉 态度差 "
        "态度太差 态度很差 态度恶劣 发火 发怒 怒火 气人 气愤 恼怒 愤愤 发飙 冒火 "
        "窝火 可恶 该死 受够 不爽 不满 不耐烦 烦人 吵死 过分 欺人太甚 凭什么 不公平 "
        "不可理喻 闭嘴 滚 恨 骗子 混球 傻逼 神经病 有病 别烦 气得 unacceptable "
        "resent resentful bullshit disrespectful go_away leave_me_alone angry anger "
        "mad pissed annoyed annoying irritated irritating hate hated hating rage "
        "outrageous drives_me_crazy driving_me_crazy drive_me_crazy shut_up damn_it "
        "dammit can't_stand cannot_stand get_lost screw_you piss_me_off "
        "pisses_me_off unfair not_funny",
        0.5: "莫名其妙 胡扯 吼 揍 被坑 坑人 怒 骂 欺负 骗 骗我 笨蛋 白痴 蠢 废物 "
        "垃圾 吵 太吵 讨厌你 不服 无法忍受 真是够了 头都大 发脾气 stop_it rude "
        "nonsense stupid idiot ridiculous damn bloody jerk liar hateful",
    },
    E.DISGUST: {
        0.9: "不堪入目 恶心透了 恶心死 令人作呕 作呕 反胃 想吐 恶心 倒胃口 恶臭 "
        "sickening nauseating disgusts_me grosses_me_out disgusting disgusted "
        "revolting repulsive vile makes_me_sick gross yuck yucky eww ew",
        0.7: "蛆 呕吐 腐烂 难看死 真脏 好脏 膈应 辣眼睛 难闻 难吃 恶心人 嫌弃 厌恶 "
        "反感 鄙视 呸 发霉 馊了 臭死 好臭 发臭 太臭 无耻 不要脸 恶心巴拉 猥琐 龌龊 "
        "肮脏 看不下去 smells_bad tastes_awful tastes_terrible nauseous repugnant "
        "sleazy nasty sick_of stinks stinky smelly filthy rotten moldy puke vomit "
        "throw_up disgust repulsed",
        0.5: "呕 讨厌 不喜欢 脏 臭 蟑螂 虫子 苍蝇 变态 油腻 下流 黏糊糊 脏兮兮 腥 "
        "吐了 spoiled dirty creepy_crawly cockroach cockroaches slimy don't_like "
        "do_not_like",
    },
    E.FRUSTRATION: {
        0.9: "弄不明白 搞不明白 一筹莫展 束手无策 崩溃 抓狂 心态崩 要疯了 快疯了 "
        "受不了 忍不下去 干不下去 撑不下去 怎么都不行 怎么也不行 还是不行 又失败 "
        "又错了 又搞砸 搞不定 白费 徒劳 糟透 why_does_this_keep enough_is_enough "
        "never_works frustrated frustrating frustration fed_up sick_and_tired "
        "at_my_wit's_end at_my_wits_end nothing_works i_give_up",
        0.7: "无言 无言以对 想不明白 搞了半天 弄了半天 折腾了半天 白搭 没辙 心塞 "
        "堵心 烦心 烦透了 为什么又 为什么总是 怎么老是 怎么总是 怎么又 又要加班 "
        "心累 烦躁 受挫 挫败 挫折 气馁 折腾 无语 服了 头疼 头大 搞砸 砸了 失败了 "
        "又坏了 又坏 又错 又输 又卡 又挂 又崩 又断 又不行 又出错 又出问题 又来了 "
        "又是这样 又迟到 又忘 还是没用 还是失败 还是错 还是没反应 还是不对 还是不会 "
        "还是没好 怎么弄都 怎么试都 试了好多次 不管用 没反应 不灵 失灵 卡死 卡住 "
        "死机 白忙 白干 重来 弄不好 修不好 搞不懂 想不通 学不会 做不到 打不开 "
        "连不上 登不上 用不了 用不了了 动不了 太难了 难死了 麻烦死 好麻烦 真麻烦 "
        "真倒霉 倒霉 晦气 憋屈 窝囊 不甘心 无奈 烦 好烦 心烦 烦死人 一团糟 糟糕 "
        "完蛋 放弃 不想干了 不顺 诸事不顺 不给力 can't_get_this can't_make_it_work "
        "nothing_i_do nothing_helps doesn't_help keep_happening why_do_i_keep "
        "same_mistake same_mistakes hundred_times can't_figure_out can't_get_it "
        "again_and_again keeps_happening always_happens ugh argh stuck give_up "
        "giving_up doesn't_work does_not_work not_working isn't_working won't_work "
        "didn't_work still_not_working still_doesn't still_not still_broken "
        "not_again keeps_failing keeps_crashing keep_failing keeps_breaking "
        "tried_everything waste_of_time useless pointless hopeless can't_take_it "
        "cannot_take_it can't_do_this why_won't why_doesn't why_does_it_keep "
        "messed_up screwed_up annoyingly broke_again again? tired_of",
        0.5: "头痛 掉线 断网 堵车 加班 卡壳 就是不行 就是不对 都不行 总是不行 "
        "一直不行 死活 试了好几遍 试了很多次 试了好多遍 没搞定 没弄好 没修好 没解决 "
        "报错 没用 没办法 好难啊 太难啦 失败 不靠谱 麻烦了 哭笑不得 热死 冷死 饿死 "
        "渴死 i'm_done over_it bug failed fail failing broken again crashed crash "
        "difficult so_hard impossible",
        0.35: "老是 总是",
    },
    E.ANXIETY: {
        0.9: "不知道该怎么办 不知如何是好 不知道怎么办 担惊受怕 焦虑 坐立不安 "
        "心神不宁 提心吊胆 忐忑 七上八下 急死 焦头烂额 不知所措 手足无措 心慌 "
        "慌得很 压力山大 worried_sick nerve-wracking anxious anxiety panicking "
        "panic_attack freaking_out stressed_out",
        0.7: "怕赶不上 怕迟到 怕考 怕失败 怕说错 怕做错 怕忘 怕错过 怕耽误 怕会 "
        "怕万一 怕出错 怕出事 焦躁 好急 要迟到了 快迟到 赶不及 放心不下 忧心 "
        "心跳加速 心里发慌 紧张 担心 担忧 不安 慌 慌张 着急 著急 焦急 发愁 揪心 "
        "忧虑 犯愁 压力大 压力好大 压力很大 压力太大 有压力 睡不着 失眠 怎么办 "
        "心里没底 没底 不踏实 不放心 来不及 赶不上 怕来不及 生怕 不妙 完了完了 "
        "这下完了 我完了 under_pressure losing_sleep butterflies nervous worried "
        "worry worrying worries stressed stress stressful tense uneasy panic "
        "overwhelmed restless jittery apprehensive on_edge what_should_i_do what_if "
        "can't_sleep cannot_sleep what_do_i_do oh_no",
        0.5: "忙不过来 做不完 牵挂 惦记 没把握 没信心 愁 手心出汗 冒汗 赶时间 急 "
        "烦恼 纠结 不对劲 万一 不见了 找不到 压力 no_time so_much_to_do "
        "too_much_to_do heart_is_racing can't_stop_thinking pressure running_late "
        "i'm_late edgy concerned",
        0.35: "考试 截止 面试 迟到 presentation deadline exam interview",
    },
    E.FEAR: {
        0.9: "畏惧 心惊胆战 吓哭 害怕 恐惧 吓死 毛骨悚然 不寒而栗 胆战心惊 魂飞魄散 "
        "头皮发麻 惊恐 好可怕 太可怕 吓坏 scares_me scared terrified terrifying "
        "frightened horrified petrified scared_to_death",
        0.7: "惊吓 胆怯 恐慌 惊慌 怕怕 后怕 发毛 有鬼 闹鬼 恐高 怕 可怕 吓人 吓到 "
        "吓我 吓了 恐怖 惊悚 瘆人 渗人 阴森 发抖 颤抖 不敢 怕黑 噩梦 救命 scare "
        "spooked creeped_out fright phobia afraid fear fearful frightening scary "
        "creepy spooky horror horrifying freaked_out nightmare nightmares shaking "
        "trembling help!",
        0.5: "毛毛的 跟踪 地震 火灾 着火 吓 鬼 危险 胆小 心有余悸 haunted "
        "goosebumps dangerous ghost ghosts",
        0.35: "小偷 打雷",
    },
    E.SADNESS: {
        0.9: "没有人关心 没有人在乎 心都碎 心碎了 伤心欲绝 泪流满面 哭成狗 想死 "
        "活着好累 闷闷不乐 没人在乎 没人关心 大哭 痛哭 哭泣 伤心 悲伤 心碎 心痛 "
        "想哭 痛苦 绝望 悲痛 难过 不想活 活着没意思 哭死 泪崩 泪奔 心如刀割 "
        "欲哭无泪 broke_my_heart heartache mourning nobody_cares no_one_cares sad "
        "heartbroken depressed devastated miserable broken_heart grief grieving "
        "in_tears want_to_cry feel_like_crying",
        0.7: "心情不太好 感觉不好 感觉很不好 状态不好 不太好受 忌日 想她了 想他了 "
        "想你了 好想她 好想他 很想她 很想他 没有人理 没有人懂 没有人爱 没人爱 空虚 "
        "空落落 失魂落魄 受打击 愁眉苦脸 后悔 自责 内疚 愧疚 鼻子一酸 凄凉 孤零零 "
        "没朋友 被孤立 不被理解 哭 哭了 呜呜 不开心 不高兴 不快乐 不愉快 郁闷 失落 "
        "孤独 寂寞 孤单 沮丧 低落 消沉 抑郁 忧郁 忧伤 伤感 悲哀 难受 委屈 心情不好 "
        "心情很差 心情差 心情糟 心情特别差 心情非常差 心情好差 心情好糟 心情糟糕 "
        "去世 过世 离世 离开了我 永远离开 不在了 不幸 唉声叹气 失恋 分手 被甩 "
        "舍不得 想念 思念 想你 想家 心疼 泪目 流泪 眼泪 好丧 哭哭 没人理 没人陪 "
        "没有人陪 没人懂 被抛弃 可怜 好惨 悲剧 不好受 regret melancholy sorrowful "
        "tearing_up left_out emo unhappy upset sadness cry crying cried tears "
        "lonely sorrow gloomy feel_down feeling_down feel_so_down "
        "feeling_really_down feel_really_down feeling_pretty_down feeling_low "
        "feel_low feeling_blue feel_blue passed_away died lost_my miss_you miss_her "
        "miss_him miss_them miss_my i_miss missing_you bad_day rough_day heartbreak "
        "sobbing sob hurts hurt",
        0.5: "打击 怀念 唉 叹气 累 好累 累死 心酸 辛酸 走丢 丢了 不舒服 生病 病了 "
        "住院 疼 丧 惨 难熬 离别 被骂 被批评 empty guilty sigh tired exhausted sick "
        "awful terrible lost alone",
    },
    E.DISAPPOINTMENT: {
        0.9: "白盼 失望 大失所望 白期待 空欢喜 白高兴 落空 期待落空 令人失望 "
        "not_what_i_expected expected_better disappointed disappointing "
        "disappointment let_down letdown",
        0.7: "放鸽子 放我鸽子 爽约 不过尔尔 名不副实 没希望了 可惜 遗憾 太可惜 扫兴 "
        "败兴 泄气 灰心 心灰意冷 不过如此 也就这样 不如预期 不如想象 辜负 不值 "
        "不值得 不满意 不好吃 白等 白跑 没考上 没选上 落选 落榜 没中 没抽中 没拿到 "
        "没赢 取消了 泡汤 错过了 fell_short overrated waste_of_money not_as_good "
        "what_a_shame too_bad bummer underwhelming what_a_pity not_worth "
        "expected_more fell_through missed_out that_sucks it_sucks",
        0.5: "指望 没戏 上当 不怎么样 就这 输了 错过 差劲 oh_well so_much_for pity "
        "shame sucks lost_the we_lost cancelled canceled",
    },
    E.BOREDOM: {
        0.9: "没事可干 无聊透顶 不知道做什么 不知道干嘛 不知道干什么 不知道玩什么 "
        "意思都没有 无聊 百无聊赖 无所事事 闷得慌 好闷 无聊死 没事做 没什么事做 "
        "没啥事做 没事干 没什么事干 无事可做 闲得发慌 闲得慌 闲得无聊 闲死 bored "
        "boring boredom nothing_to_do",
        0.7: "好闲 太闲 闲得 没什么好玩 没啥好玩 没有意思 昏昏欲睡 老一套 腻味 "
        "没意思 没劲 乏味 枯燥 单调 无趣 没什么意思 没啥意思 腻了 厌倦 提不起劲 "
        "提不起兴趣 没兴趣 不感兴趣 无精打采 打发时间 消磨时间 发呆 好困 犯困 困死 "
        "一成不变 千篇一律 没事可做 nothing_interesting nothing_fun "
        "same_thing_every_day no_fun dull tedious monotonous meh yawn killing_time "
        "kill_time so_slow same_old not_interested uninteresting",
        0.5: "闲着 想睡觉 闷 困 懒得 不想动 哈欠 瞌睡 dragging sleepy whatever",
    },
    E.JOY: {
        0.9: "乐死 笑开了花 合不拢嘴 笑疯 笑喷 爱死 太爱 开心 高兴 快乐 幸福 "
        "心花怒放 乐开花 喜出望外 乐坏了 美滋滋 开森 笑死 笑哭 太好了 好开心 心情好 "
        "心情很好 心情不错 心情超好 心情特别好 心情非常好 心情真好 心情挺好 "
        "心情大好 心情超级好 心情好好 blessed happy overjoyed delighted joyful "
        "love_it loved_it love_this made_my_day never_been_happier "
        "couldn't_be_happier",
        0.7: "治愈 过瘾 痛快 开怀 笑出声 真香 棒棒哒 完美 愉快 欢乐 喜悦 美好 欣慰 "
        "满足 满意 舒心 哈哈 嘻嘻 爽 好爽 真爽 好玩 有趣 有意思 好笑 乐呵 真好 好棒 "
        "真棒 很棒 棒极了 好极了 了不起 真不错 得意 自豪 骄傲 享受 陶醉 幸运 好幸运 "
        "走运 运气好 顺利 成功了 甜蜜 喜欢 爱了 好吃 best_day loving adore perfect "
        "excellent brilliant grinning good_day enjoyable glad pleased cheerful joy "
        "great wonderful lovely fun funny hilarious haha hahaha hehe lol lmao rofl "
        "feel_good feeling_good good_mood enjoy enjoyed enjoying i_love proud lucky "
        "smile smiling laugh laughing satisfied",
        0.5: "通过了 甜甜的 暖暖的 温暖 好美 好漂亮 萌 不错 挺好 嘿嘿 笑 笑了 微笑 "
        "可爱 好看 好听 赞 点赞 棒 爱 放假 生日快乐 beautiful cute best nice good "
        "cool sweet not_bad not_too_bad pretty_good love",
    },
    E.GRATITUDE: {
        0.9: "感激不尽 承蒙关照 好在有你 你帮了大忙 谢谢 感谢 多谢 感激 感恩 谢谢你 "
        "太感谢 万分感谢 辛苦了 麻烦你了 多亏了你 多亏你 幸亏有你 有你真好 还好有你 "
        "thank_you thanks thank grateful appreciate appreciated thankful",
        0.7: "蟹蟹 让你受累了 有劳 帮了大忙 救了我 你太好了 谢了 谢啦 谢 感动 "
        "费心了 破费了 让你费心 你真好 你最好了 真贴心 贴心 暖心 多亏 you_saved_me "
        "lifesaver you_rock you're_awesome you're_amazing 3q thx ty thank_u "
        "you're_the_best you_are_the_best so_kind kind_of_you means_a_lot owe_you "
        "tysm",
        0.5: "劳烦 bless_you cheers",
    },
    E.RELIEF: {
        0.9: "万幸 放下心 石头落地 躲过一劫 有惊无险 平安无事 还来得及 松了一口气 "
        "松口气 松了口气 谢天谢地 虚惊一场 如释重负 总算 放心了 glad_that's_over "
        "breathe_again off_my_shoulders relieved relief phew thank_god "
        "thank_goodness thank_heavens what_a_relief dodged_a_bullet",
        0.7: "得亏 安全了 逃过 赶上了 终于 还好 幸好 幸亏 好在 好险 没事了 安心了 "
        "踏实了 解脱 得救了 逃过一劫 搞定了 总算好了 false_alarm just_in_time "
        "safe_and_sound finally at_last close_call that_was_close glad_it's_over "
        "safe_now made_it",
        0.5: "呼 来得及 平安 解决了 搞定 没事就好 it's_over",
    },
    E.EXCITEMENT: {
        0.9: "中大奖 中了大奖 中彩票 梦想成真 燃爆 太棒了 好激动 激动 兴奋 中奖 "
        "迫不及待 等不及 超级期待 欣喜若狂 兴高采烈 激动人心 心潮澎湃 太爽了 万岁 "
        "thrilling exhilarated dream_come_true excited exciting thrilled can't_wait "
        "cannot_wait can_not_wait ecstatic over_the_moon woohoo hooray",
        0.7: "拿到offer 拿到了offer 期待已久 嗨起来 沸腾 狂欢 欢呼 兴致勃勃 "
        "跃跃欲试 耶 好期待 期待 太酷了 太牛了 牛逼 真牛 好牛 好刺激 刺激 哇塞 振奋 "
        "热血 好嗨 嗨皮 赢了 赢啦 抽中 录取 考上 升职 加薪 求婚 冲鸭 太神了 "
        "got_an_offer got_tickets fired_up bring_it_on woo best_news yay awesome "
        "amazing fantastic incredible epic psyched pumped stoked looking_forward "
        "let's_go lets_go i_won we_won jackpot got_the_job got_promoted "
        "got_accepted passed_the_exam so_cool hyped",
        0.5: "尖叫 摩拳擦掌 酷 厉害 好厉害 燃 中了 yes! won",
        0.35: "旅游 旅行 演唱会 出发 concert",
    },
    E.SURPRISE: {
        0.9: "竟有此事 吓我一跳 震惊 惊呆 大吃一惊 目瞪口呆 不可思议 难以置信 "
        "不敢相信 真的假的 万万没想到 出乎意料 意想不到 吓一跳 吓了一跳 好吃惊 "
        "didn't_see_that_coming jaw_dropped mind_blown never_expected surprised "
        "shocked astonished stunned can't_believe cannot_believe unbelievable "
        "no_way no_way!",
        0.7: "什么情况 惊了 没料到 料不到 居然 竟然 没想到 想不到 天哪 天啊 天呐 "
        "我的天 不会吧 吃惊 惊讶 意外 惊喜 怎么可能 卧槽 傻眼 什么？ 什么? 什么！ "
        "什么! 啥？ 啥? 真的吗 真的？ 真的? wait_what no_kidding you're_joking "
        "caught_me_off_guard holy_cow holy_shit who_knew speechless wow whoa "
        "oh_my_god oh_my_gosh oh_my unexpected surprise surprising didn't_expect "
        "did_not_expect really? seriously? for_real? are_you_serious "
        "are_you_kidding you're_kidding what?! what?",
        0.5: "竟是 竟会 哇 啊？ 诶？ 咦 怎么会 怎么回事 out_of_the_blue holy "
        "never_thought omg what! oh! huh?",
        0.35: "原来",
    },
    E.CALM: {
        0.9: "不慌不忙 悠哉 舒舒服服 随遇而安 平静 心平气和 岁月静好 慢慢来 不着急 "
        "不急 放轻松 淡定 悠闲 惬意 tranquil calming stress-free calm peaceful "
        "relaxed relaxing serene take_it_easy no_rush no_hurry take_your_time "
        "at_peace",
        0.7: "一切都好 心静 静下心 安宁 从容 淡然 慢悠悠 舒坦 顺其自然 看开了 "
        "想开了 放松 安心 舒服 宁静 平和 没关系 没事 没事的 不要紧 没什么大不了 "
        "轻松 自在 坦然 佛系 放空 冥想 慵懒 歇会 歇一会 休息一下 晒太阳 安安静静 "
        "all_is_well mellow soothing easygoing no_stress chill chilling chill_out "
        "cozy comfy comfortable no_worries don't_mind all_good laid_back unwind",
        0.5: "睡个好觉 静静 心态好 安静 舒适 凉爽 清爽 深呼吸 喝杯茶 喝茶 休息 随缘 "
        "it_is_what_it_is doesn't_matter",
        0.35: "泡澡",
    },
    E.NEUTRAL: {
        0.6: "没感觉 无感 说不上来 没什么特别 还行 还行吧 一般 一般般 还可以 凑合 "
        "马马虎虎 就那样 还好吧 还好啦 无所谓 都行 随便 nothing_special average "
        "so-so it's_ok it's_okay its_ok i'm_ok i'm_okay i'm_fine it's_fine not_sure "
        "i_guess",
        0.35: "就这样 正常 好的 好吧 嗯 哦 知道了 行吧 ok okay fine alright",
    },
}

# Cues that negate to something other than their label's default.
NEGATED_AS: dict[str, Emotion] = {
    "不开心": E.JOY, "不高兴": E.JOY, "不快乐": E.JOY, "不愉快": E.JOY,
    "unhappy": E.JOY, "心情不好": E.JOY, "不舒服": E.CALM, "不安": E.CALM,
}  # fmt: skip

# The default label of a negated cue: negative emotions calm down, positive
# ones turn into their counterpart.
FLIP: dict[Emotion, Emotion] = {
    E.JOY: E.SADNESS,
    E.EXCITEMENT: E.DISAPPOINTMENT,
    E.GRATITUDE: E.NEUTRAL,
    E.RELIEF: E.ANXIETY,
    E.CALM: E.ANXIETY,
    E.SURPRISE: E.CALM,
    E.NEUTRAL: E.NEUTRAL,
}

# Cues a negator does not reach (interjections, laughter, thanks).
UNNEGATABLE = frozenset(
    _surfaces(
        "哈哈 嘻嘻 嘿嘿 呜呜 唉 哎 哇 哇塞 耶 呸 天哪 天啊 天呐 我的天 卧槽 谢谢 "
        "haha hahaha hehe lol lmao wow whoa omg ugh argh yay phew"
    )
)

# Cues that describe someone else: "别这么烦人" is still anger.
CAUSATIVE = frozenset(
    _surfaces(
        "annoying irritating rude mean stupid ridiculous gross disgusting creepy "
        "scary 讨厌 恶心 可恶 无聊 吵"
    )
)
# Negators of commands: they do not reach a causative cue.
IMPERATIVE_NEGATORS = frozenset({"别", "不要", "别再", "甭", "不许", "don't be"})

EMOJI_WEIGHT = 0.7
EMOJI: dict[Emotion, str] = {
    E.ANGER: "😡 🤬 😠 👿 💢 🖕",
    E.DISGUST: "🤢 🤮 🤧 💩",
    E.FRUSTRATION: "😤 😩 😫 😣 😖 🤦",
    E.ANXIETY: "😰 😟 😬 😥 😓",
    E.FEAR: "😱 😨 🙀 👻",
    E.SADNESS: "😭 😢 😿 💔 😔 🥺 ☹ 🙁 😪",
    E.DISAPPOINTMENT: "😞 😒",
    E.BOREDOM: "😴 🥱 💤 😑",
    E.JOY: "😂 🤣 😄 😊 😁 😃 😀 🙂 ☺ 😆 😸 😹 😍 🥰 ❤ 💕 💖 😘 😋 😺 👍 💯",
    E.GRATITUDE: "🙏 💐",
    E.RELIEF: "😌 😮‍💨",
    E.EXCITEMENT: "🤩 🎉 🥳 🎊 🔥 🙌 ✨ 🚀",
    E.SURPRISE: "😮 😲 😯 😳 🤯 ‼ ⁉",
    E.CALM: "🧘 🍵 ☕ 🌿 😇",
}
EMOTICONS: dict[Emotion, str] = {
    E.JOY: ":) :-) :d :-d ^_^ ^^ ^o^ (^_^) xd",
    E.SADNESS: ":( :-( t_t t-t tat qaq qwq ;( :'(",
    E.FRUSTRATION: "orz >_< -_-#",
    E.SURPRISE: "o_o o.o :o :-o",
    E.BOREDOM: "-_- =_=",
}

# --- modifiers --------------------------------------------------------------

NEGATORS: dict[float, str] = {
    # value: the degree the negator gives a negated positive cue ("不太开心").
    1.0: "不 没 没有 别 不是 并不 并没有 并非 从不 从来不 从没 从来没 从来没有 毫不 "
    "毫无 绝不 决不 才不 不会 不再 不用 不必 不要 甭 无需 未 未必 根本不 根本没 "
    "完全不 完全没 哪有 没什么 not no never don't dont doesn't doesnt didn't "
    "didnt isn't isnt aren't arent wasn't wasnt weren't won't wouldn't "
    "cannot can't cant couldn't shouldn't mustn't needn't haven't hasn't hadn't "
    "ain't nor neither without no_longer not_even 不许 别再 don't_be",
    1.3: "一点都不 一点也不 一点儿都不 一点儿也不 丝毫不 丝毫没有 not_at_all never_ever "
    "not_even_a_little",
    0.75: "不太 不怎么 不大 没那么 不那么 没多 not_very not_that not_too not_so "
    "hardly barely",
}

DEGREE: dict[float, str] = {
    1.5: "非常 特别 超级 超 极其 极度 极 太 太过 无比 万分 十分 格外 分外 超级无敌 "
    "巨 贼 简直 extremely incredibly absolutely totally utterly terribly "
    "super really_really insanely ridiculously",
    1.3: "很 好 真 真的 挺 蛮 相当 实在 更 更加 越来越 这么 那么 多么 如此 好生 最 "
    "so very really truly deeply quite too such seriously genuinely",
    1.1: "pretty rather fairly 还挺 还蛮 比较 还算",
    0.6: "有点 有点儿 有些 一点 一点点 一些 稍微 稍 略 略微 些许 "
    "a_bit a_little a_little_bit slightly kinda kind_of sort_of somewhat "
    "a_tad mildly bit little",
}

POST_DEGREE: dict[float, str] = {
    1.5: "死了 死我了 得要命 要命 得不得了 不得了 得不行 极了 坏了 透了 死 到爆 爆了 "
    "to_death as_hell so_much very_much a_lot",
    1.2: "得很",
}

# Conjunctions that end a clause; contrastive ones weigh what follows more.
CONTRAST = (
    "但是 但 可是 不过 然而 只是 却 结果 偏偏 谁知 谁知道 没想到 哪知道 "
    "but however though although yet turns_out turned_out instead"
)
BREAK_WORDS = "而且 并且 然后 所以 因为 and_then so_then because"
PUNCTUATION = "，,。.；;：:、…~～\n（）()【】[]"  # clause breaks
EXCLAIM = "!！"
QUESTION = "?？"

# Expectations: with a later contrast they read as disappointment.
EXPECTATIONS = (
    "本来以为 原以为 本以为 还以为 原来以为 满心期待 满怀期待 期待了 盼了 等了好久 "
    "等了半天 等了那么久 盼了好久 以为你会 以为他会 以为她会 "
    "i_thought i_was_hoping was_hoping i_expected was_expecting i_hoped "
    "was_supposed_to were_supposed_to"
)
# Promises and hopes: disappointment only when a contrast follows
# ("他答应来的，结果…", "本来很期待的，结果…").
PROMISES = "本来 原本 答应 说好的 明明说好 说好了 promised supposed_to"

# Patterns a word list cannot express: (literal that must occur, regex, label,
# weight). "还是编译不过": "still" then a negation; "试了十次都…".
STRUCTURES: tuple[tuple[str, str, Emotion, float], ...] = (
    (
        "还是",
        r"还是[^，,。.!！?？;；]{0,5}?[不没](?!错|客气|好意思)",
        E.FRUSTRATION,
        0.6,
    ),
    ("试了", r"试了[^，,。.!！?？;；]{0,6}?(?:还是|都|也)", E.FRUSTRATION, 0.6),
)

# Words that contain a negator or a cue but are neither.
BLOCKERS = (
    "不知道 不晓得 不清楚 不了解 不得不 不管 不论 不然 不如 不但 不仅 不断 不停 不少 "
    "不久 不同 不一定 不好意思 不客气 不用谢 不谢 差不多 要不 要不要 是不是 会不会 "
    "能不能 可不可以 行不行 好不好 对不对 有没有 开不开心 高不高兴 对不起 忍不住 "
    "不一会 不一样 了不得 不用了 不记得 没问题 没错 没什么事 没多久 没过多久 没这么 "
    "没有这么 从没这么 从来没这么 从来没有这么 没有比 未来 但愿 招呼 呼吸 称呼 呼叫 "
    "呼唤 呼噜 呼呼 恐怕 哪怕 怕是 麻烦 麻烦你 麻烦帮 闷热 开玩笑 笑话 可笑 爱好 "
    "恋爱 爱人 累计 积累 连累 残酷 燃气 燃烧 棒球 棒棒糖 冰棒 心脏 内脏 脏话 臭美 "
    "别人 别的 区别 告别 分别 级别 类别 性别 识别 个别 差别 辨别 派别 好久 好像 好多 "
    "好几 好些 只好 正好 刚好 最好 好好 好奇 好吗 好不容易 好闷热 太闷热 难道 难怪 "
    "难免 难得 靠谱 依靠 客气 困难 can't_stop cannot_stop couldn't_stop can't_help "
    "no_idea no_problem not_only not_just never_mind don't_know dont_know don't_care "
    "no_wonder no_one nobody good_morning good_night good_evening good_afternoon "
    "pretty_much so_that so_far"
)

# --- compiled table ---------------------------------------------------------


class Kind(IntEnum):
    """What a matched surface does."""

    CUE = 0
    NEGATOR = 1
    DEGREE = 2
    POST_DEGREE = 3
    BREAK = 4
    BLOCK = 5
    EXPECT = 6


@dataclass(frozen=True, slots=True)
class Token:
    """The meaning of one surface of the lexicon."""

    kind: Kind
    weight: float = 1.0  # cue weight, or degree factor
    label: Emotion | None = None  # cues
    negated_as: Emotion | None = None  # cues: the label when negated
    negatable: bool = True
    contrast: bool = False  # breaks: what follows weighs more
    exclaim: bool = False  # breaks: "!"
    question: bool = False  # breaks: "?"
    surprise_marker: bool = False  # "居然": a negation after it reads as disappointment
    causative: bool = False  # cues: "烦人" describes the listener; "别…" keeps it
    imperative: bool = False  # negators: "别", "不要", "don't be"


SURPRISE_MARKERS = frozenset(_surfaces("居然 竟然 没想到 想不到 万万没想到"))
# Surfaces that also end a clause, contrastively ("没想到…").
CONTRAST_CUES = frozenset({"没想到", "万万没想到", "谁知"})


def _traditional_aliases(surface: str) -> list[str]:
    """Spellings of a Chinese surface that Traditional input folds to instead."""
    if surface.isascii():
        return []
    aliases = []
    for variant in ("zh-Hant", "zh-TW", "zh-HK"):
        folded = to_simplified(zhconv(surface, variant))
        if folded != surface and len(folded) == len(surface):
            aliases.append(folded)
    return aliases


_DOUBLED = re.compile(r"([a-z])\1")


def _elongation_aliases(surface: str) -> list[str]:
    """Return "col" for "cool": elongated input ("coool") folds to one letter."""
    if not surface.isascii() or not _DOUBLED.search(surface):
        return []
    return [_DOUBLED.sub(r"\1", surface)]


def _build_table() -> dict[str, Token]:
    """Return surface -> token for the whole lexicon (earlier entries win)."""
    table: dict[str, Token] = {}

    def add(surface: str, token: Token) -> None:
        table.setdefault(surface, token)

    for surface in _surfaces(BLOCKERS):
        add(surface, Token(Kind.BLOCK))
    for surface in _surfaces(EXPECTATIONS):
        add(surface, Token(Kind.EXPECT, 0.45, E.DISAPPOINTMENT))
    for surface in _surfaces(PROMISES):
        add(surface, Token(Kind.EXPECT, 0.0, E.DISAPPOINTMENT))
    for label, tiers in CUES.items():
        for weight, spec in tiers.items():
            for surface in _surfaces(spec):
                add(
                    surface,
                    Token(
                        Kind.CUE,
                        weight,
                        label,
                        negated_as=NEGATED_AS.get(surface),
                        negatable=surface not in UNNEGATABLE,
                        causative=surface in CAUSATIVE or surface.endswith("人"),
                        contrast=surface in CONTRAST_CUES,
                        surprise_marker=surface in SURPRISE_MARKERS,
                    ),
                )
    for label, spec in EMOJI.items():
        for surface in spec.split():
            add(surface, Token(Kind.CUE, EMOJI_WEIGHT, label, negatable=False))
    for label, spec in EMOTICONS.items():
        for surface in spec.split():
            add(surface, Token(Kind.CUE, EMOJI_WEIGHT, label, negatable=False))
    for factor, spec in NEGATORS.items():
        for surface in _surfaces(spec):
            imperative = surface in IMPERATIVE_NEGATORS
            add(surface, Token(Kind.NEGATOR, factor, imperative=imperative))
    for factor, spec in DEGREE.items():
        for surface in _surfaces(spec):
            add(surface, Token(Kind.DEGREE, factor))
    for factor, spec in POST_DEGREE.items():
        for surface in _surfaces(spec):
            add(surface, Token(Kind.POST_DEGREE, factor))
    for surface in _surfaces(CONTRAST):
        add(surface, Token(Kind.BREAK, contrast=True))
    for surface in _surfaces(BREAK_WORDS):
        add(surface, Token(Kind.BREAK))
    for char in PUNCTUATION:
        add(char, Token(Kind.BREAK))
    for char in EXCLAIM:
        add(char, Token(Kind.BREAK, exclaim=True))
    for char in QUESTION:
        add(char, Token(Kind.BREAK, question=True))
    for surface, token in list(table.items()):
        for alias in _traditional_aliases(surface):
            add(alias, token)
        if token.kind is Kind.CUE:
            for alias in _elongation_aliases(surface):
                add(alias, token)
    return table


_LATIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# Latin words match whole words only; these stand for \b without counting
# Chinese as letters ("开心happy" has "happy").
_WORD_START = "(?<![a-z0-9'].)"  # after the first letter: the one before it
_WORD_END = "(?![a-z0-9])"
BUCKETS = 8


def _compile(surfaces: list[str]) -> re.Pattern[str]:
    """Compile one alternation over every surface, as a character trie."""
    return re.compile(
        alternation(
            surfaces,
            start=lambda char: _WORD_START if char in _LATIN else "",
            end=lambda char: _WORD_END if char in _LATIN else "",
            buckets=BUCKETS,
        )
    )


TABLE: dict[str, Token] = _build_table()
COMPILED_STRUCTURES: tuple[tuple[str, re.Pattern[str], Emotion, float], ...] = tuple(
    (literal, re.compile(pattern), label, weight)
    for literal, pattern, label, weight in STRUCTURES
)
PATTERN: re.Pattern[str] = _compile(list(TABLE))
# Every cue word, for baselines and tests.
CUE_WORDS: tuple[str, ...] = tuple(s for s, t in TABLE.items() if t.kind is Kind.CUE)
